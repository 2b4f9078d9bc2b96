"""The request and response models of the settings service (:mod:`rrf_retriever.apps.service`); their one home
(the service imports them from here).
"""

from __future__ import annotations

from typing import Annotated, Any, Optional, Union

try:
    from pydantic import BaseModel, ConfigDict, Field, model_validator
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    from rrf_retriever.errors import missing_dependency

    raise missing_dependency(exc.name or "fastapi", "server", "the settings service") from exc

from rrf_retriever.engine import MAX_TOP_K
from rrf_retriever.engine.options import OPTION_NAMES, SearchOptions

#: Documents per ``POST /documents`` (and ids per ``DELETE /documents``).
MAX_DOCUMENTS_PER_REQUEST = 1000
#: Characters of a query text (``q`` of ``GET /search``, ``query`` of ``POST /search``).
MAX_QUERY_CHARS = 10_000
_MAX_EXCLUDE_IDS = 10_000

_Weight = Annotated[float, Field(ge=0, allow_inf_nan=False)]
_Count = Annotated[int, Field(ge=1, le=MAX_TOP_K)]
_Id = Annotated[str, Field(min_length=1, max_length=1024)]
_Text = Annotated[str, Field(max_length=MAX_QUERY_CHARS)]


# -- models ---------------------------------------------------------------------------------------------------


class SettingsView(BaseModel):
    """The tunable settings, camelCase. ``k`` is the RRF constant (rrf_k); ``topK`` the number of results."""

    semanticWeight: float = Field(description="Weight of the dense (semantic) leg(s), >= 0.")
    keywordWeight: float = Field(description="Weight of the keyword (BM25) leg(s), >= 0.")
    topK: int = Field(description="Number of fused results returned per query (1..10000).")
    k: float = Field(description="The RRF constant (rrf_k): score = sum w / (k + rank). NOT the result count.")
    fetchK: Optional[int] = Field(description="Hits each leg fetches (>= topK); null means max(2 * topK, 40).")  # noqa: UP045
    diversity: Optional[float] = Field(None, description="MMR lambda in [0, 1] after fusion; null: off.")  # noqa: UP045
    rerankK: Optional[int] = Field(None, description="Candidates the reranker sees; null: max(2 * topK, 20).")  # noqa: UP045
    expandLimit: Optional[int] = Field(None, description="At most this many 1-hop neighbours; null: topK.")  # noqa: UP045


class PatchedSettings(SettingsView):
    """The settings after a ``PATCH /settings``, and whether the change was saved."""

    persisted: bool = Field(description="True: saved in the index directory's manifest (a restart keeps it); "
                                        "false: held in memory only (the service serves no index directory).")


class SettingsPatch(BaseModel):
    """A partial settings change; unknown keys are refused (422)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    semanticWeight: Optional[_Weight] = None  # noqa: UP045
    keywordWeight: Optional[_Weight] = None  # noqa: UP045
    topK: Optional[_Count] = None  # noqa: UP045
    k: Optional[Annotated[float, Field(ge=0, allow_inf_nan=False, description="The RRF constant (rrf_k).")]] = None  # noqa: UP045
    fetchK: Optional[_Count] = Field(None, description="Hits per leg, >= topK; null = 2 * topK.")  # noqa: UP045
    diversity: Optional[float] = Field(None, description="MMR lambda in [0, 1]; null turns it off.")  # noqa: UP045
    rerankK: Optional[_Count] = Field(None, description="Reranker candidates; null = max(2 * topK, 20).")  # noqa: UP045
    expandLimit: Optional[_Count] = Field(None, description="1-hop neighbours at most; null = topK.")  # noqa: UP045

    @model_validator(mode="after")
    def _no_null_except_fetch_k(self) -> SettingsPatch:
        for name in ("semanticWeight", "keywordWeight", "topK", "k"):
            if name in self.model_fields_set and getattr(self, name) is None:
                msg = f"{name} cannot be null"
                raise ValueError(msg)
        return self


#: The search options a request does not give under their own name: a request cannot name code, so its
#: ``rerank: false`` only switches off the reranker the server was started with.
NOT_IN_REQUESTS = frozenset({"reranker"})


class SearchRequest(BaseModel):
    """``POST /search``: the query (``q`` or ``query``) and the full filter language as JSON.

    Each field named like a search option (:class:`~rrf_retriever.engine.options.SearchOptions`) is that option
    (:meth:`options`); the fields declare only the JSON types and the service's limits.
    """

    model_config = ConfigDict(extra="forbid", strict=True)

    q: Optional[_Text] = Field(None, description="The query text (or give `query`).")  # noqa: UP045
    query: Optional[_Text] = Field(None, description="Same as `q`.")  # noqa: UP045
    top_k: Optional[_Count] = Field(None, description="Results (default: topK).")  # noqa: UP045
    # A string or a list is no filter of ours: it reaches the parser, which names the dialect (Milvus, Elasticsearch).
    filter: Optional[Union[dict[str, Any], str, list[Any]]] = Field(  # noqa: UP007, UP045
        None, description='The filter language: {"session_id": [1, 2], "lang": "en"}; [] matches nothing. Another '
                          "store's dialect (Qdrant, Elasticsearch, Weaviate JSON, a Milvus expression) is a 422 "
                          "naming it.")
    exclude_ids: Optional[Annotated[list[_Id], Field(max_length=_MAX_EXCLUDE_IDS)]] = Field(  # noqa: UP045
        None, description="Ids never to return.")
    weights: Optional[dict[str, _Weight]] = Field(  # noqa: UP045
        None, description="Per-call weights by source name (e.g. dense, keyword), merged over the settings.")
    offset: int = Field(0, ge=0, le=MAX_TOP_K, description="Skip this many results (paging over one fused list).")
    score_threshold: Optional[float] = Field(  # noqa: UP045
        None, ge=0.0, le=1.0, description="Keep hits whose normalized score (0..1, 1 = first in every leg) reaches it.")
    pinned_ids: Optional[Annotated[list[_Id], Field(max_length=_MAX_EXCLUDE_IDS)]] = Field(  # noqa: UP045
        None, description="Ids always in the first page when they pass the filter (marked rrf_pinned).")
    query_vector: Optional[Annotated[list[float], Field(max_length=65_536)]] = Field(  # noqa: UP045
        None, description="A query vector to use instead of embedding the query (shared with other lookups).")
    # The stages' values are checked by the engine (422 with its message), only their JSON types here.
    diversity: Optional[float] = Field(  # noqa: UP045
        None, description="MMR lambda in [0, 1] over the candidates' stored vectors (1 = the fused order).")
    rerank: Optional[bool] = Field(  # noqa: UP045
        None, description="false: skip the reranker the server was started with (serve --reranker) this call.")
    rerank_k: Optional[int] = Field(None, description="Candidates the reranker sees (default max(2*top_k, 20)).")  # noqa: UP045
    dense_paths: Optional[dict[str, Optional[Union[dict[str, Any], str, list[Any]]]]] = Field(  # noqa: UP007, UP045
        None, description='Extra dense legs over the dense store, each with its own filter instead of `filter` '
                          '(null: unfiltered): {"dense_all": null}. Weighted by weights[name].')
    expand_limit: Optional[int] = Field(None, description="At most this many 1-hop neighbours (default top_k).")  # noqa: UP045
    fetch_k: Optional[int] = Field(  # noqa: UP045
        None, description="Hits each leg fetches this call, the candidates diversity re-orders (default "
                          "max(2*top_k, 40); top_k to 10000).")

    @model_validator(mode="after")
    def _one_query(self) -> SearchRequest:
        if (self.q is None) == (self.query is None):
            msg = "give the query text as `q` or as `query` (exactly one)"
            raise ValueError(msg)
        return self

    @property
    def text(self) -> str:
        return self.q if self.q is not None else self.query  # type: ignore[return-value]  # the validator ensures one

    def options(self) -> SearchOptions:
        """The request's search options: every field named like an option is that option; ``rerank: false`` is
        ``reranker=False`` (none this call).

        Raises:
            InvalidArgumentError / InvalidTypeError: a value the options refuse (the service answers 422).

        Example:
            >>> SearchRequest(q="x", top_k=3, rerank=False).options().reranker
            False
        """
        given = {name: value for name, value in self if name in OPTION_NAMES}
        if self.rerank is False:
            given["reranker"] = False
        return SearchOptions.from_kwargs(**given)


class DocumentIn(BaseModel):
    """One document to upsert."""

    model_config = ConfigDict(extra="forbid", strict=True)

    id: _Id
    text: str
    metadata: Optional[dict[str, Any]] = None  # noqa: UP045


class AddDocuments(BaseModel):
    """``POST /documents``."""

    model_config = ConfigDict(extra="forbid", strict=True)

    documents: Annotated[list[DocumentIn], Field(min_length=1, max_length=MAX_DOCUMENTS_PER_REQUEST)]


class DeleteDocuments(BaseModel):
    """``DELETE /documents``."""

    model_config = ConfigDict(extra="forbid", strict=True)

    ids: Annotated[list[_Id], Field(min_length=1, max_length=MAX_DOCUMENTS_PER_REQUEST)]


class WrittenIds(BaseModel):
    """The ids a write touched."""

    ids: list[str]
