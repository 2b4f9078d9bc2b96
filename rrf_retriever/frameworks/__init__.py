"""What the framework edges share, framework-free: the retriever's neutral core and the hooks each framework implements.

* :mod:`~rrf_retriever.frameworks.core`: :class:`~rrf_retriever.frameworks.core.RetrieverCore` (writes, settings,
  scoping, search) and the search keywords;
* :mod:`~rrf_retriever.frameworks.sides`: :class:`~rrf_retriever.frameworks.sides.FrameworkSide`, what one
  framework contributes (its retrievers as legs, its documents, rerankers and filters converted);
* :mod:`~rrf_retriever.frameworks.results`: result metadata (``rrf_*`` keys), content ids, reranker scores;
* :mod:`~rrf_retriever.frameworks.building`: the engine and the stores from a retriever's arguments.

The frameworks themselves live in :mod:`rrf_retriever.langchain` and :mod:`rrf_retriever.llama_index`, each
importable with only its own framework installed; :mod:`rrf_retriever.retriever` composes ``EnsembleRRFRetriever``
from the ones that are. Nothing here imports them.
"""
