"""langchain."""
