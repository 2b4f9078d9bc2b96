"""EnsembleRRFRetriever: ONE object that is the retriever of every framework installed (LangChain, LlamaIndex, both).

With both installed it is a ``langchain_core.retrievers.BaseRetriever`` (``invoke``, ``ainvoke``, ``batch``, LCEL,
``as_tool``) AND a ``llama_index.core.retrievers.BaseRetriever`` (``retrieve``, ``aretrieve``, query engines) over
the framework-neutral :class:`~rrf_retriever.engine.HybridEngine`. With one installed
(``pip install 'rrf-retriever[langchain]'`` or ``[llama-index]``) it is that framework's retriever
(:class:`rrf_retriever.langchain.LangChainRRFRetriever` or
:class:`rrf_retriever.llama_index.LlamaIndexRRFRetriever`, importable directly too: a LangChain user
who has LlamaIndex installed skips its import cost that way).

Four things make the double inheritance work (each guarded by a test):

1. LlamaIndex keeps instance state (``callback_manager``, ``object_map``, ``_verbose``) that a pydantic model would
   refuse: the first two are declared as excluded pydantic fields, ``_verbose`` as a private attribute, and both
   ``__init__`` s are called.
2. LlamaIndex calls ``_aretrieve(query_bundle=...)`` by keyword: the parameter is named ``query_bundle``.
3. ``get_prompts`` clashes (LangChain's takes a config and returns a list, LlamaIndex's takes nothing and returns a
   dict): a retriever has no prompts, so it returns ``[]`` when LangChain passes a config and ``{}`` otherwise.
4. Both async paths are native (``asearch``), not a sync call in disguise.

Naming: the RRF constant is ``rrf_k`` (default 60); the number of results is ``top_k``. LangChain users write ``k``
for the number of results (``as_retriever(search_kwargs={"k": 4})``), so a bare ``k`` given to this retriever is
taken as ``top_k``, never as the RRF constant. An unknown keyword argument is an error; another library's name gets
a hint (LangChain's ``retrievers=[...]`` names ``sources={...}``), and ``from_texts`` / ``from_documents`` accept
LlamaIndex's ``embed_model=`` for ``embedding``.

Copies (``copy.copy``, ``copy.deepcopy``, pydantic's ``model_copy(deep=True)``) SHARE the engine, which holds open
stores like a database client: the copy's own ``search_kwargs`` and framework settings are copied (a deep copy's
are its own), the stores are not; closing the original or the copy closes the shared engine for both.

Example:
    >>> from rrf_retriever import EnsembleRRFRetriever, HashingEmbedding  # doctest: +SKIP
    >>> r = EnsembleRRFRetriever.from_texts(["FTS5 error E42", "vector search"], HashingEmbedding())  # doctest: +SKIP
    >>> r.invoke("E42", k=1)[0].metadata["rrf_ranks"]  # doctest: +SKIP
    {'keyword': 1, 'dense': 2}
"""

from __future__ import annotations

from importlib.util import find_spec
from typing import Any

from rrf_retriever.errors import MissingDependencyError

__all__ = ["EnsembleRRFRetriever"]


def _installed(module: str) -> bool:
    try:
        return find_spec(module) is not None
    except ModuleNotFoundError:  # a parent package is missing
        return False


_LANGCHAIN = _installed("langchain_core")
_LLAMA_INDEX = _installed("llama_index.core")

if _LANGCHAIN and _LLAMA_INDEX:
    from pydantic import Field, PrivateAttr

    from rrf_retriever.langchain.retriever import LangChainRRFRetriever, LangChainSide
    from rrf_retriever.llama_index.retriever import LlamaIndexSide  # a LlamaIndex BaseRetriever

    class EnsembleRRFRetriever(LangChainRRFRetriever, LlamaIndexSide):
        """Hybrid dense + keyword retriever fused by weighted RRF, for LangChain and LlamaIndex alike.

        Args:
            dense: A dense store (e.g. :class:`~rrf_retriever.stores.qdrant.QdrantDenseStore`), source "dense".
            keyword: A keyword store (e.g. :class:`~.stores.fts5.store.FTS5KeywordStore`), source "keyword".
            sources: More sources, ``{name: store | LangChain retriever | LlamaIndex retriever}``.
            weights: ``{source: weight >= 0}``; a source of weight 0 is not even queried.
            semantic_weight: Shortcut for ``weights["dense"]`` (default 1.0).
            keyword_weight: Shortcut for ``weights["keyword"]`` (default 1.25: see ``benchmarks/RESULTS.md``).
            rrf_k: The RRF constant (default 60, the textbook value; chosen across five collections).
            top_k: Results per query (default 10). ``k`` is accepted as an alias (LangChain's name for it).
            fetch_k: Hits each leg fetches (default ``max(2 * top_k, 40)``).
            leg_timeout: Seconds a leg may take before it is dropped from the query.
            on_error: ``"degrade"`` (default: a failing leg is dropped, a warning says so) or ``"raise"``.
            fusion: ``"rrf"`` (default), ``"relative_score"``, ``"dbsf"`` or ``"calibrated"``.
            expand / links_key / expand_limit: 1-hop expansion (see :class:`~rrf_retriever.engine.HybridEngine`).
            search_kwargs: Per-instance search defaults: ``top_k``/``k``, ``filter``, ``exclude_ids``, ``weights``.
            journal: A write-ahead journal (path or :class:`~rrf_retriever.engine.Journal`) that makes multi-store
                writes crash-safe: an interrupted batch is redone in every store when the retriever is built again.
            id_key: The metadata key that holds document ids, as in LangChain's ``EnsembleRetriever(id_key=...)``:
                read from LangChain retrievers used as sources whose documents have no ``Document.id``, and written
                into every LangChain result (``metadata[id_key] = Document.id``, unless the stored metadata has it).
            engine: An existing :class:`~rrf_retriever.engine.HybridEngine` to wrap instead.
            tags / metadata / name: LangChain's; callback_manager / object_map / verbose: LlamaIndex's.
            score: What LlamaIndex's ``NodeWithScore.score`` holds: ``"raw"`` (default) the fused score,
                ``"normalized"`` the normalized one in [0, 1] (``rrf_score_normalized``, rank-based), ``"relevance"``
                the relevance in [0, 1] (``rrf_relevance``: low for an unrelated query; for similarity cutoffs).

        Example:
            >>> retriever = EnsembleRRFRetriever(dense=dense_store, keyword=fts5_store, top_k=5)  # doctest: +SKIP
            >>> retriever.invoke("error E1234", filter={"session_id": [1, 2]})  # doctest: +SKIP
        """

        _sides = (LangChainSide, LlamaIndexSide)

        # LlamaIndex's instance state, declared so that pydantic accepts it; never serialised.
        callback_manager: Any = Field(default=None, exclude=True)
        object_map: dict[str, Any] = Field(default_factory=dict, exclude=True)
        _verbose: bool = PrivateAttr(default=False)
        _node_score: str = PrivateAttr(default="raw")  # LlamaIndex's NodeWithScore.score: one of SCORES

        def get_prompts(self, config: Any = None) -> Any:
            """No prompts: ``[]`` for LangChain (called with a config), ``{}`` for LlamaIndex (called without)."""
            return [] if config is not None else {}

elif _LANGCHAIN:
    from rrf_retriever.langchain.retriever import (  # type: ignore[assignment]  # one name, per install
        LangChainRRFRetriever as EnsembleRRFRetriever,
    )
elif _LLAMA_INDEX:
    from rrf_retriever.llama_index.retriever import (  # type: ignore[assignment]  # one name, per install
        LlamaIndexRRFRetriever as EnsembleRRFRetriever,
    )
else:
    msg = (
        "EnsembleRRFRetriever needs LangChain or LlamaIndex: pip install 'rrf-retriever[langchain]' or "
        "'rrf-retriever[llama-index]' (the engine, rrf_retriever.HybridEngine, needs neither)"
    )
    raise MissingDependencyError(msg)
