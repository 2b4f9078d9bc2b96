"""Runnable examples of rrf-retriever inside LangChain and LlamaIndex (each exercised by tests/integrations)."""
