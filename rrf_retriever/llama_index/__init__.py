"""llama_index."""
