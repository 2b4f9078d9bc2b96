"""The settings and search service (extra ``server``): tune, query and write a running retriever over HTTP, as a
memory service does. Served by ``rrf-retriever serve`` (bound to 127.0.0.1 unless told otherwise).

Endpoints (the OpenAPI document at ``/openapi.json``; a self-contained page listing the routes at ``/docs``, no
CDN assets, served without the key: :mod:`rrf_retriever.apps.service_docs`; no ``/redoc``):

- ``GET /settings`` -> ``{"semanticWeight", "keywordWeight", "topK", "k", "fetchK"}``.
- ``PATCH /settings`` with any subset of those keys (camelCase JSON). **In this API ``k`` is the RRF constant
  (``rrf_k``, default 60)**, as memory services name it, and ``topK`` is the number of results;
  ``fetchK`` is the hits each leg fetches (``null`` = ``max(2 * topK, 40)``). Validated: an unknown key, a wrong type,
  NaN/infinity, a negative weight or ``k``, ``topK``/``fetchK`` outside 1..10000, both weights 0, or a ``fetchK``
  below ``topK`` (after the change; a leg must fetch at least the results returned: raise ``fetchK`` or set it to
  ``null``) -> 422 and nothing changes. A valid change is one atomic settings swap: the next request uses it.
  The reply is the new settings plus ``"persisted"``: with ``index_path`` the settings are saved in the index
  directory's manifest (beside ``tune``'s; ``open_index`` applies them, so a restart keeps them; a failed save
  is a 503 and nothing changes); without it they live in memory only (``"persisted": false``).
- ``GET /search?q=...&top_k=5&session_ids=1,2,3&exclude_ids=a,b`` -> hits (id, text, metadata, score,
  normalized_score, relevance, ranks, scores: the dense legs' raw scores only, see Privacy) and the trace
  (per-leg latency, hits, errors; the weights used). ``session_ids`` (alias ``sessionIds``, the seed client's
  spelling) becomes the filter ``{"session_id": [1, 2, 3]}``, applied inside every store before its top-k;
  integers are parsed, anything else stays a string. A parameter given twice adds to the list
  (``session_ids=1&session_ids=2`` is ``1,2``; the same for ``exclude_ids``). **An empty session list
  (``session_ids=``, ``session_ids=%20``, ``session_ids=,,``) is a 422**, never "every session": nobody sends
  an empty parameter to mean "match nothing", and it must never widen the search; a blank item (``1,,2``,
  ``1,``) is malformed, also a 422; ``session_ids`` and ``sessionIds`` together are a 422. To match nothing on
  purpose, ``POST /search`` with ``{"filter": {"session_id": []}}``.
- ``POST /search`` with a JSON body ``{"q" | "query": str, "top_k": int, "filter": {...}, "exclude_ids": [...],
  "weights": {"dense": w, "keyword": w}}``: the full filter language (shorthand ``{"key": [any-of]}``, and the
  operators the engine supports) passed to the engine as is; the engine validates it (a malformed filter is a
  422 with its message). An empty any-of list matches nothing: ``{"filter": {"session_id": []}}`` returns no hits.
  ``weights`` are per-call, by source name (as the trace names them).
- ``POST /documents`` with ``{"documents": [{"id": str, "text": str, "metadata": {...}}, ...]}`` (1 to
  :data:`~rrf_retriever.apps.service_models.MAX_DOCUMENTS_PER_REQUEST` per request) -> ``{"ids": [...]}``: an upsert
  into every store through the engine's write-ahead journal (all or nothing across stores). ``DELETE /documents`` with
  ``{"ids": [...]}`` -> ``{"ids": [...]}`` (missing ids are no error). So one process serves and writes an index; with
  ``index_path`` (``rrf-retriever serve`` passes it) the manifest's ``doc_count`` is refreshed after each write.
- ``GET /health`` -> ``{"status": "ok", "documents": {...}}`` (never needs the API key).

Strictness: an unknown query parameter on any route (``?sessionId=1``, ``?topK=3``), an unknown JSON field in
any body and a JSON object repeating a key at any depth (``type`` ``json_duplicate_key``, its ``loc``) are a 422
naming it; never silently ignored (an ignored scope would be an unscoped search). Every error is
JSON ``{"detail": ...}`` with our message: 422 for bad input (validation errors keep ``loc``, ``msg`` and ``type``
but never the input; long words in any message are clipped, so a huge input is never echoed back), 503 when the
stores or the embedder fail, a generic 500 (details only in the server log) for a bug, never a traceback.

Protection (options of :func:`create_app`, and of ``rrf-retriever serve``):

- ``api_key`` (``serve``: the environment variable ``RRF_RETRIEVER_API_KEY`` or ``--api-key-file``;
  ``--api-key`` shows the key to local users): every route but ``/health`` and the ``/docs`` page
  (``/openapi.json`` included) requires ``Authorization: Bearer <key>``, compared in constant time; otherwise 401
  with ``WWW-Authenticate: Bearer``. None (default): no authentication.
- ``allowed_hosts`` (``--allowed-host``, repeatable): the ``Host`` header must name one of them, else 400
  (DNS rebinding: a web page that makes ``evil.example`` resolve to 127.0.0.1 must not reach the service).
  Default :data:`DEFAULT_ALLOWED_HOSTS` (``localhost``, ``127.0.0.1``, ``::1``); ``serve`` adds the host it binds
  (unless a wildcard address such as ``0.0.0.0``) and each ``--allowed-host``. ``"*.example.com"`` allows
  subdomains; ``"*"`` allows any host.
- ``max_body`` (``--max-body``, bytes, default :data:`DEFAULT_MAX_BODY` = 1 MiB): a larger request is a 413. A
  ``Content-Length`` above it is refused before anything is read; a streamed body is counted as it arrives and
  cut at the limit, so at most ``max_body`` bytes are ever held.
- ``index_path``: the index directory whose manifest to refresh after writes and to save the settings in (None:
  no manifest; settings changes are lost on restart).

Privacy: BM25 statistics are collection-wide. A keyword score counts how many documents of the WHOLE collection
hold each query term (IDF), other sessions' and users' included, even when the search is scoped to one session: an
own-session score that drops when more of the collection holds the term tells that someone else's memories mention
it. So the keyword (and foreign retriever) legs' raw scores are left out of each hit's ``scores`` unless the
operator passes ``expose_keyword_scores=True`` (``serve --expose-scores``). What stays: ``ranks`` and, with RRF
fusion, ``score`` and ``normalized_score``, which depend only on the ranks and the weights. Ranks leak far less but
not nothing: the order of one's own documents follows the collection-wide statistics (the terms' IDFs; for FTS5
also the mean document length), so a caller who writes probe documents can learn whether one term is rarer than
another in the collection (a comparison per query, no counts). With a score fusion (``"relative_score"``, ``"dbsf"``,
``"calibrated"``) the fused score is computed from the raw scores (normalized per query) and carries part of what
they do. Per-scope statistics are not done here:
the Qdrant legs could ask for the IDF of the points matching the query's filter (``SearchParams.idf`` with a corpus
filter, in qdrant-edge 0.9 and qdrant-client 1.20), FTS5 and bm25s cannot. Serve one index per tenant when the
rank-level leak matters.

Example:
    >>> from rrf_retriever.index.directory import open_index  # doctest: +SKIP
    >>> app = create_app(open_index(".idx"), api_key="s3cret", index_path=".idx")  # doctest: +SKIP
    >>> import uvicorn; uvicorn.run(app, port=8000)  # doctest: +SKIP
"""

import logging
import os
import threading
from collections.abc import Callable, Sequence
from typing import Annotated, Any, Optional

try:
    from fastapi import FastAPI, HTTPException, Query
    from fastapi.exceptions import RequestValidationError
    from fastapi.responses import HTMLResponse, JSONResponse
    from starlette.exceptions import HTTPException as StarletteHTTPException
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    from rrf_retriever.errors import missing_dependency

    raise missing_dependency(exc.name or "fastapi", "server", "the settings service") from exc

from rrf_retriever.apps.service_docs import DOCS_HEADERS, DOCS_PATH, docs_page
from rrf_retriever.apps.service_guards import (
    OPEN_PATHS,
    Guard,
    StrictQueryRoute,
    check_host_patterns,
    engine_error,
    http_error,
    internal_error,
    key_digest,
    validation_error,
)
from rrf_retriever.apps.service_models import (
    MAX_QUERY_CHARS,
    AddDocuments,
    DeleteDocuments,
    PatchedSettings,
    SearchRequest,
    SettingsPatch,
    SettingsView,
    WrittenIds,
)
from rrf_retriever.engine import MAX_TOP_K, HybridEngine
from rrf_retriever.engine.options import SearchOptions
from rrf_retriever.engine.settings import RetrievalSettings
from rrf_retriever.errors import InvalidArgumentError, InvalidTypeError, RRFRetrieverError
from rrf_retriever.metadata import public_result_dict
from rrf_retriever.scope.cli_syntax import parse_filter_values

__all__ = [
    "API_KEY_ENV",
    "DEFAULT_ALLOWED_HOSTS",
    "DEFAULT_MAX_BODY",
    "create_app",
]

logger = logging.getLogger(__name__)

#: The environment variable ``rrf-retriever serve`` reads the API key from (``--api-key`` wins).
API_KEY_ENV = "RRF_RETRIEVER_API_KEY"
#: Host names accepted by default (the bound host is added by ``serve``).
DEFAULT_ALLOWED_HOSTS: tuple[str, ...] = ("localhost", "127.0.0.1", "::1")
#: Default request body limit, in bytes.
DEFAULT_MAX_BODY = 1024 * 1024


# -- the app --------------------------------------------------------------------------------------------------


def _legs_of_kind(engine: HybridEngine, kind: str) -> list[str]:
    return [name for name, leg in engine.legs.items() if leg.kind == kind]


def _view(engine: HybridEngine) -> SettingsView:
    s = engine.settings

    def weight(kind: str) -> float:
        names = _legs_of_kind(engine, kind)
        return s.weights[names[0]] if names else 0.0

    return SettingsView(semanticWeight=weight("dense"), keywordWeight=weight("keyword"), topK=s.top_k,
                        k=s.rrf_k, fetchK=s.fetch_k, diversity=s.diversity, rerankK=s.rerank_k,
                        expandLimit=s.expand_limit)


def _session_values(name: str, raws: list[str]) -> list[str | int]:
    """Each ``a,b`` of a (possibly repeated) session parameter; empty or blank items -> 422."""
    values: list[str | int] = []
    for raw in raws:
        items = [item.strip() for item in raw.split(",")]
        if not any(items):
            msg = (f"{name} is empty: an empty session list would match nothing; leave {name} out to search "
                   'every session (to match nothing on purpose: POST /search {"filter": {"session_id": []}})')
            raise HTTPException(422, msg)
        if not all(items):
            msg = f"{name} is malformed: a blank item in {raw!r}; give comma-separated ids such as 1,2,3"
            raise HTTPException(422, msg)
        values.extend(parse_filter_values(raw))
    return values


def _id_list(raws: list[str] | None) -> list[str] | None:
    """``["a,b", "c"]`` -> ``["a", "b", "c"]`` (ids stay strings; blanks dropped: excluding nothing is harmless)."""
    if not raws:
        return None
    return [v.strip() for raw in raws for v in raw.split(",") if v.strip()]


def create_app(
    engine: HybridEngine,
    *,
    title: str = "rrf-retriever settings service",
    api_key: str | None = None,
    allowed_hosts: Sequence[str] | None = None,
    max_body: int = DEFAULT_MAX_BODY,
    index_path: str | os.PathLike[str] | None = None,
    expose_keyword_scores: bool = False,
) -> FastAPI:
    """Build the FastAPI app around any :class:`~rrf_retriever.engine.HybridEngine`.

    Args:
        engine: The engine to serve (its journal, if any, records the writes).
        title: The OpenAPI title.
        api_key: Require ``Authorization: Bearer <api_key>`` on every route but ``/health``; None: no auth.
        allowed_hosts: Host names the ``Host`` header may carry (``"*.x.org"`` subdomains, ``"*"`` any);
            None: :data:`DEFAULT_ALLOWED_HOSTS`.
        max_body: Largest request body in bytes (413 above it).
        index_path: The index directory whose manifest (``doc_count``) is refreshed after each write.
        expose_keyword_scores: Return the raw scores of the keyword (and foreign retriever) legs in each hit's
            ``scores``; False (default): only the dense legs' raw scores are returned (a BM25 score carries the
            collection-wide IDF, so it tells whether other tenants' documents hold a query term).

    Raises:
        InvalidArgumentError / InvalidTypeError: an empty ``api_key``, a bad host pattern or ``max_body``; a
            non-bool ``expose_keyword_scores``.

    Example:
        >>> from rrf_retriever.stores.fts5.store import FTS5KeywordStore  # doctest: +SKIP
        >>> app = create_app(HybridEngine({"keyword": FTS5KeywordStore()}))  # doctest: +SKIP
    """
    key: bytes | None = None
    if api_key is not None:
        if not isinstance(api_key, str):
            msg = f"api_key must be a string, not {type(api_key).__name__}"
            raise InvalidTypeError(msg)
        if not api_key or api_key != api_key.strip() or not api_key.isprintable():
            msg = "api_key must be a non-empty printable string without surrounding spaces (None: no auth)"
            raise InvalidArgumentError(msg)
        key = key_digest(api_key)
    hosts = check_host_patterns(DEFAULT_ALLOWED_HOSTS if allowed_hosts is None else allowed_hosts)
    if not isinstance(expose_keyword_scores, bool):
        msg = f"expose_keyword_scores must be True or False, not {type(expose_keyword_scores).__name__}"
        raise InvalidTypeError(msg)
    # A dense score depends on the query and the document only; any other leg's may carry corpus statistics.
    withheld = set() if expose_keyword_scores else {n for n, leg in engine.legs.items() if leg.kind != "dense"}
    if isinstance(max_body, bool) or not isinstance(max_body, int) or max_body < 1:
        msg = f"max_body must be a positive number of bytes, got {max_body!r}"
        raise InvalidArgumentError(msg)

    app = FastAPI(
        title=title,
        description=(
            "Hybrid retrieval (dense + keyword) fused with weighted Reciprocal Rank Fusion. Settings are camelCase; "
            "in this API `k` is the RRF constant (rrf_k, default 60) and `topK` is the number of results. Unknown "
            "query parameters and body fields are refused (422)."
            + (" Every route but /health and /docs needs `Authorization: Bearer <key>`." if key else "")
        ),
        docs_url=None,  # Swagger UI and ReDoc load their assets from a CDN: our own page instead (service_docs)
        redoc_url=None,
    )
    app.router.route_class = StrictQueryRoute
    app.add_exception_handler(RequestValidationError, validation_error)  # type: ignore[arg-type]  # takes a subclass of Exception
    app.add_exception_handler(StarletteHTTPException, http_error)  # type: ignore[arg-type]  # takes a subclass of Exception
    app.add_exception_handler(Exception, internal_error)
    app.add_middleware(Guard, hosts=hosts, key=key, max_body=max_body)
    patch_lock = threading.Lock()  # PATCHes are read-modify-write: serialise them (searches never wait)
    write_lock = threading.Lock()  # a write and its manifest refresh go together

    @app.get("/health")
    def health() -> dict[str, Any]:
        """Liveness and the document count per store (no API key needed)."""
        return {"status": "ok", "documents": engine.count()}

    page: list[str] = []  # built once, on first request (the OpenAPI document is complete by then)

    @app.get(DOCS_PATH, include_in_schema=False)
    def docs() -> HTMLResponse:
        """The self-contained docs page (no API key needed: it holds no data)."""
        if not page:
            page.append(docs_page(app.openapi(), keyed=key is not None, openapi_url=app.openapi_url or ""))
        return HTMLResponse(page[0], headers=DOCS_HEADERS)

    @app.get("/settings", response_model=SettingsView)
    def get_settings() -> SettingsView:
        """The current settings snapshot."""
        return _view(engine)

    @app.patch("/settings", response_model=PatchedSettings)
    def patch_settings(patch: SettingsPatch) -> PatchedSettings:
        """Change some settings; all or nothing, effective from the next request; saved in the index directory's
        manifest when the service serves one (``persisted``), so a restart keeps them."""
        with patch_lock:
            weights: dict[str, float] = {}
            for field_name, kind in (("semanticWeight", "dense"), ("keywordWeight", "keyword")):
                value = getattr(patch, field_name)
                if value is not None:
                    names = _legs_of_kind(engine, kind)
                    if not names:
                        raise HTTPException(422, f"{field_name}: this engine has no {kind} leg")
                    weights.update(dict.fromkeys(names, value))
            if weights and not any({**engine.settings.weights, **weights}.values()):
                raise HTTPException(422, "semanticWeight and keywordWeight cannot both be 0")
            changes: dict[str, Any] = {}
            if weights:
                changes["weights"] = weights
            if patch.topK is not None:
                changes["top_k"] = patch.topK
            if patch.k is not None:
                changes["rrf_k"] = patch.k
            if "fetchK" in patch.model_fields_set:
                changes["fetch_k"] = patch.fetchK
            for camel, name in (("diversity", "diversity"), ("rerankK", "rerank_k"), ("expandLimit", "expand_limit")):
                if camel in patch.model_fields_set:  # null switches the stage back to its default
                    changes[name] = getattr(patch, camel)
            if changes:  # fetchK below topK (after the change) is the settings type's own check: a 422 below
                before = engine.settings
                try:
                    engine.update_settings(**changes)
                except RRFRetrieverError as exc:
                    raise engine_error(exc) from exc
                if index_path is not None:
                    try:
                        with write_lock:  # the manifest is read-modify-write, as after a document write
                            persist_service_settings(index_path, engine.settings)
                    except (OSError, RRFRetrieverError) as exc:
                        engine.update_settings(**{name: getattr(before, name) for name in changes})  # all or nothing
                        logger.warning("rrf-retriever service: settings not saved in %s: %s", index_path, exc)
                        raise HTTPException(503, "the settings could not be saved in the index directory; "
                                                 "nothing changed (see the server log)") from exc
            return PatchedSettings(**_view(engine).model_dump(), persisted=index_path is not None)

    async def run_search(text: str, options: Callable[[], SearchOptions]) -> JSONResponse:
        try:
            result = await engine.asearch(text, options())  # built here: a refused option is a 422 too
        except RRFRetrieverError as exc:
            raise engine_error(exc) from exc
        out = public_result_dict(result)
        for hit in out["hits"]:
            hit["scores"] = {name: v for name, v in hit["scores"].items() if name not in withheld}
        return JSONResponse({"query": text, **out})

    @app.get("/search")
    async def search(
        q: Annotated[str, Query(description="The query text.", max_length=MAX_QUERY_CHARS)],
        top_k: Annotated[Optional[int], Query(ge=1, le=MAX_TOP_K, description="Results (default: topK).")] = None,  # noqa: UP045
        session_ids: Annotated[Optional[list[str]], Query(  # noqa: UP045
            description="Comma list: only these sessions (repeatable; empty is a 422).")] = None,
        session_ids_alias: Annotated[Optional[list[str]], Query(  # noqa: UP045
            alias="sessionIds", description="Alias of session_ids (the seed client's spelling).")] = None,
        exclude_ids: Annotated[Optional[list[str]], Query(  # noqa: UP045
            description="Comma list of ids never to return (repeatable).")] = None,
    ) -> JSONResponse:
        """Hybrid search; the hits carry their fused score, per-leg ranks and the dense legs' raw scores (the
        keyword legs' too with ``expose_keyword_scores``); plus the trace."""
        if session_ids is not None and session_ids_alias is not None:
            raise HTTPException(422, "give session_ids or sessionIds, not both")
        flt = None
        if session_ids is not None:
            flt = {"session_id": _session_values("session_ids", session_ids)}
        elif session_ids_alias is not None:
            flt = {"session_id": _session_values("sessionIds", session_ids_alias)}
        return await run_search(q, lambda: SearchOptions(top_k=top_k, filter=flt, exclude_ids=_id_list(exclude_ids)))

    @app.post("/search")
    async def search_json(body: SearchRequest) -> JSONResponse:
        """Hybrid search with the full filter language as JSON (an empty any-of list matches nothing)."""
        return await run_search(body.text, body.options)

    def refresh_manifest() -> None:  # after a write; the settings are saved by PATCH /settings
        if index_path is not None:
            from rrf_retriever.index.manifest import save_manifest

            save_manifest(index_path, engine)

    @app.post("/documents", response_model=WrittenIds)
    def add_documents(body: AddDocuments) -> WrittenIds:
        """Upsert documents into every store (through the journal; all or nothing across stores)."""
        docs = body.documents
        with write_lock:
            try:
                ids = engine.add([d.id for d in docs], [d.text for d in docs], [d.metadata for d in docs])
                refresh_manifest()
            except RRFRetrieverError as exc:
                raise engine_error(exc) from exc
        return WrittenIds(ids=list(ids))

    @app.delete("/documents", response_model=WrittenIds)
    def delete_documents(body: DeleteDocuments) -> WrittenIds:
        """Delete ids from every store (missing ids are no error)."""
        with write_lock:
            try:
                engine.delete(body.ids)
                refresh_manifest()
            except RRFRetrieverError as exc:
                raise engine_error(exc) from exc
        return WrittenIds(ids=body.ids)

    if key is not None:
        _declare_bearer(app)
    return app


def persist_service_settings(index_path: str | os.PathLike[str], settings: RetrievalSettings) -> None:
    """Save the settings ``PATCH /settings`` can change in the index directory's manifest (as ``tune`` saves its
    choice): ``open_index`` applies them on the next start.

    Raises:
        IndexDirectoryError / OSError: the manifest cannot be read or written.
    """
    from rrf_retriever.index.manifest import persist_settings

    persist_settings(index_path, {
        "weights": dict(settings.weights), "top_k": settings.top_k, "rrf_k": settings.rrf_k,
        "fetch_k": settings.fetch_k, "diversity": settings.diversity, "rerank_k": settings.rerank_k,
        "expand_limit": settings.expand_limit})


def _declare_bearer(app: FastAPI) -> None:
    """Show the bearer scheme in the OpenAPI document (the docs' Authorize button)."""
    build = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = build()
            schema.setdefault("components", {}).setdefault("securitySchemes", {})["bearer"] = {
                "type": "http", "scheme": "bearer"}
            for path, operations in schema.get("paths", {}).items():
                if path not in OPEN_PATHS:
                    for operation in operations.values():
                        operation["security"] = [{"bearer": []}]
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]  # FastAPI documents replacing it to extend the schema
