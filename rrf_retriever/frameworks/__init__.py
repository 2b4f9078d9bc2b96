"""The framework edge: LangChain and LlamaIndex types live only in these modules (and in embeddings adapters).

``langchain.py`` and ``llama_index.py`` are each importable with only their own framework installed;
:mod:`rrf_retriever.retriever` composes ``EnsembleRRFRetriever`` from the ones that are.
"""
