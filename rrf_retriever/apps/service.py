"""The settings and search service (extra ``server``): tune, query and write a running retriever over HTTP, as a
memory service does. Served by ``rrf-retriever serve`` (bound to 127.0.0.1 unless told otherwise).

Endpoints (OpenAPI docs at ``/docs``):

- ``GET /settings`` -> ``{"semanticWeight", "keywordWeight", "topK", "k", "fetchK"}``.
- ``PATCH /settings`` with any subset of those keys (camelCase JSON). **In this API ``k`` is the RRF constant
  (``rrf_k``, default 2)**, as the seed memory service names it, and ``topK`` is the number of results;
  ``fetchK`` is the hits each leg fetches (``null`` = ``2 * topK``). Validated: an unknown key, a wrong type,
  NaN/infinity, a negative weight or ``k``, ``topK``/``fetchK`` outside 1..10000, both weights 0, or a ``fetchK``
  below ``topK`` (after the change; a leg must fetch at least the results returned: raise ``fetchK`` or set it to
  ``null``) -> 422 and nothing changes. A valid change is one atomic settings swap: the next request uses it.
- ``GET /search?q=...&top_k=5&session_ids=1,2,3&exclude_ids=a,b`` -> hits (id, text, metadata, score, ranks,
  scores) and the trace (per-leg latency, hits, errors; the weights used). ``session_ids`` (alias ``sessionIds``,
  the seed client's spelling) becomes the filter ``{"session_id": [1, 2, 3]}``, applied inside every store before
  its top-k; integers are parsed, anything else stays a string. A parameter given twice adds to the list
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
  :data:`MAX_DOCUMENTS_PER_REQUEST` per request) -> ``{"ids": [...]}``: an upsert into every store through the
  engine's write-ahead journal (all or nothing across stores). ``DELETE /documents`` with ``{"ids": [...]}`` ->
  ``{"ids": [...]}`` (missing ids are no error). So one process serves and writes an index; with
  ``index_path`` (``rrf-retriever serve`` passes it) the manifest's ``doc_count`` is refreshed after each write.
- ``GET /health`` -> ``{"status": "ok", "documents": {...}}`` (never needs the API key).

Strictness: an unknown query parameter on any route (``?sessionId=1``, ``?topK=3``) and an unknown JSON field in
any body is a 422 naming it; never silently ignored (an ignored scope would be an unscoped search). Every error is
JSON ``{"detail": ...}`` with our message: 422 for bad input (validation errors keep ``loc``, ``msg`` and ``type``
but never the input; long words in any message are clipped, so a huge input is never echoed back), 503 when the
stores or the embedder fail, a generic 500 (details only in the server log) for a bug, never a traceback.

Protection (options of :func:`create_app`, and of ``rrf-retriever serve``):

- ``api_key`` (``--api-key``, or the environment variable ``RRF_RETRIEVER_API_KEY``): every route but
  ``/health`` (the docs and ``/openapi.json`` included) requires ``Authorization: Bearer <key>``, compared in
  constant time; otherwise 401 with ``WWW-Authenticate: Bearer``. None (default): no authentication.
- ``allowed_hosts`` (``--allowed-host``, repeatable): the ``Host`` header must name one of them, else 400
  (DNS rebinding: a web page that makes ``evil.example`` resolve to 127.0.0.1 must not reach the service).
  Default :data:`DEFAULT_ALLOWED_HOSTS` (``localhost``, ``127.0.0.1``, ``::1``); ``serve`` adds the host it binds
  (unless a wildcard address such as ``0.0.0.0``) and each ``--allowed-host``. ``"*.example.com"`` allows
  subdomains; ``"*"`` allows any host.
- ``max_body`` (``--max-body``, bytes, default :data:`DEFAULT_MAX_BODY` = 1 MiB): a larger request is a 413. A
  ``Content-Length`` above it is refused before anything is read; a streamed body is counted as it arrives and
  cut at the limit, so at most ``max_body`` bytes are ever held.
- ``index_path``: the index directory whose manifest to refresh after writes (None: no manifest).

Example:
    >>> from rrf_retriever.layout import open_index  # doctest: +SKIP
    >>> app = create_app(open_index(".idx"), api_key="s3cret", index_path=".idx")  # doctest: +SKIP
    >>> import uvicorn; uvicorn.run(app, port=8000)  # doctest: +SKIP
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import os
import re
import threading
import types
import typing
from collections.abc import Awaitable, Callable, Sequence
from typing import Annotated, Any, Optional

try:
    from fastapi import FastAPI, HTTPException, Query, Request
    from fastapi.exceptions import RequestValidationError
    from fastapi.responses import JSONResponse, Response
    from fastapi.routing import APIRoute
    from pydantic import BaseModel, ConfigDict, Field, model_validator
    from starlette.exceptions import HTTPException as StarletteHTTPException
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    from rrf_retriever.errors import missing_dependency

    raise missing_dependency(exc.name or "fastapi", "server", "the settings service") from exc

from rrf_retriever.engine import MAX_TOP_K, HybridEngine
from rrf_retriever.errors import InvalidArgumentError, InvalidTypeError, RRFRetrieverError
from rrf_retriever.frameworks.node_metadata import public_result_dict
from rrf_retriever.scope import parse_filter_values

__all__ = [
    "API_KEY_ENV",
    "DEFAULT_ALLOWED_HOSTS",
    "DEFAULT_MAX_BODY",
    "MAX_DOCUMENTS_PER_REQUEST",
    "AddDocuments",
    "DeleteDocuments",
    "SearchRequest",
    "SettingsPatch",
    "SettingsView",
    "create_app",
]

logger = logging.getLogger(__name__)

#: The environment variable ``rrf-retriever serve`` reads the API key from (``--api-key`` wins).
API_KEY_ENV = "RRF_RETRIEVER_API_KEY"
#: Host names accepted by default (the bound host is added by ``serve``).
DEFAULT_ALLOWED_HOSTS: tuple[str, ...] = ("localhost", "127.0.0.1", "::1")
#: Default request body limit, in bytes.
DEFAULT_MAX_BODY = 1024 * 1024
#: Documents per ``POST /documents`` (and ids per ``DELETE /documents``).
MAX_DOCUMENTS_PER_REQUEST = 1000
_MAX_QUERY_CHARS = 10_000
_MAX_EXCLUDE_IDS = 10_000
_OPEN_PATHS = frozenset({"/health"})
#: Hints for the spellings a seed client may send.
_PARAM_HINTS = {"topK": "top_k", "excludeIds": "exclude_ids", "recentIds": "exclude_ids",
                "session_id": "session_ids", "sessionId": "sessionIds", "query": "q", "k": "top_k"}

_UNIONS = (typing.Union, types.UnionType)

_Weight = Annotated[float, Field(ge=0, allow_inf_nan=False)]
_Count = Annotated[int, Field(ge=1, le=MAX_TOP_K)]
_Id = Annotated[str, Field(min_length=1, max_length=1024)]
_Text = Annotated[str, Field(max_length=_MAX_QUERY_CHARS)]


# -- models ---------------------------------------------------------------------------------------------------


class SettingsView(BaseModel):
    """The tunable settings, camelCase. ``k`` is the RRF constant (rrf_k); ``topK`` the number of results."""

    semanticWeight: float = Field(description="Weight of the dense (semantic) leg(s), >= 0.")
    keywordWeight: float = Field(description="Weight of the keyword (BM25) leg(s), >= 0.")
    topK: int = Field(description="Number of fused results returned per query (1..10000).")
    k: float = Field(description="The RRF constant (rrf_k): score = sum w / (k + rank). NOT the result count.")
    fetchK: Optional[int] = Field(description="Hits each leg fetches (>= topK); null means 2 * topK.")  # noqa: UP045
    diversity: Optional[float] = Field(None, description="MMR lambda in [0, 1] after fusion; null: off.")  # noqa: UP045
    rerankK: Optional[int] = Field(None, description="Candidates the reranker sees; null: max(2 * topK, 20).")  # noqa: UP045
    expandLimit: Optional[int] = Field(None, description="At most this many 1-hop neighbours; null: topK.")  # noqa: UP045


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


class SearchRequest(BaseModel):
    """``POST /search``: the query (``q`` or ``query``) and the full filter language as JSON."""

    model_config = ConfigDict(extra="forbid", strict=True)

    q: Optional[_Text] = Field(None, description="The query text (or give `query`).")  # noqa: UP045
    query: Optional[_Text] = Field(None, description="Same as `q`.")  # noqa: UP045
    top_k: Optional[_Count] = Field(None, description="Results (default: topK).")  # noqa: UP045
    filter: Optional[dict[str, Any]] = Field(  # noqa: UP045
        None, description='The filter language: {"session_id": [1, 2], "lang": "en"}; [] matches nothing.')
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
    dense_paths: Optional[dict[str, Optional[dict[str, Any]]]] = Field(  # noqa: UP045
        None, description='Extra dense legs over the dense store, each with its own filter instead of `filter` '
                          '(null: unfiltered): {"dense_all": null}. Weighted by weights[name].')
    expand_limit: Optional[int] = Field(None, description="At most this many 1-hop neighbours (default top_k).")  # noqa: UP045

    @model_validator(mode="after")
    def _one_query(self) -> SearchRequest:
        if (self.q is None) == (self.query is None):
            msg = "give the query text as `q` or as `query` (exactly one)"
            raise ValueError(msg)
        return self

    @property
    def text(self) -> str:
        return self.q if self.q is not None else self.query  # type: ignore[return-value]


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


# -- errors ---------------------------------------------------------------------------------------------------

_LONG_WORD = re.compile(r"\S{61,}")
_MAX_MESSAGE = 600


def _clip(text: str) -> str:
    """A message safe to send back: long words (an echoed input) shortened, the whole bounded."""
    text = _LONG_WORD.sub(lambda m: f"{m.group()[:40]}...({len(m.group())} chars)", text)
    return text if len(text) <= _MAX_MESSAGE else text[:_MAX_MESSAGE] + "..."


def _clip_loc(part: Any) -> Any:
    return _clip(part) if isinstance(part, str) else part if isinstance(part, int) else _clip(str(part))


def _json_error(status: int, detail: Any, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"detail": detail}, status_code=status, headers=headers)


async def _validation_error(request: Request, exc: RequestValidationError) -> JSONResponse:
    # FastAPI's own handler echoes the input (a huge input comes back whole; NaN breaks the JSON): never the input.
    errors = []
    for err in exc.errors()[:20]:
        errors.append({
            "loc": [_clip_loc(part) for part in err.get("loc", ())][:10],
            "msg": _clip(str(err.get("msg", ""))),
            "type": _clip(str(err.get("type", ""))),
        })
    return _json_error(422, errors)


async def _http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
    detail = _clip(exc.detail) if isinstance(exc.detail, str) else exc.detail
    return _json_error(exc.status_code, detail, getattr(exc, "headers", None))


async def _internal_error(request: Request, exc: Exception) -> JSONResponse:
    logger.error("rrf-retriever service: unexpected error on %s %s", request.method, request.url.path,
                 exc_info=exc)
    return _json_error(500, "internal error (see the server log)")


def _engine_error(exc: RRFRetrieverError) -> HTTPException:
    """Bad input (our ValueError/TypeError subclasses) -> 422 with our message; a failing store/embedder -> 503."""
    if isinstance(exc, (ValueError, TypeError)):
        return HTTPException(422, str(exc))
    logger.warning("rrf-retriever service: %s: %s", type(exc).__name__, exc)
    return HTTPException(503, f"{type(exc).__name__}: the stores or the embedder failed (see the server log)")


# -- strict query parameters ----------------------------------------------------------------------------------


def _query_fields(dependant: Any) -> list[Any]:
    fields = list(dependant.query_params)
    for sub in dependant.dependencies:
        fields.extend(_query_fields(sub))
    return fields


def _is_sequence(field: Any) -> bool:
    """A list-valued query parameter (may be repeated); anything else must be given at most once."""
    annotation = getattr(getattr(field, "field_info", None), "annotation", None)
    candidates = typing.get_args(annotation) if typing.get_origin(annotation) in _UNIONS else (annotation,)
    return any(typing.get_origin(c) in (list, tuple, set, frozenset) or c in (list, tuple, set, frozenset)
               for c in candidates)


def _unknown_params_message(unknown: list[str], allowed: set[str]) -> str:
    shown = []
    for name in unknown[:5]:
        hint = _PARAM_HINTS.get(name)
        shown.append(f"{name!r}" + (f" (did you mean {hint!r}?)" if hint in allowed else ""))
    takes = ", ".join(sorted(allowed)) if allowed else "no query parameters"
    return f"unknown query parameter(s) {', '.join(shown)}; this route takes {takes}"


class _StrictQueryRoute(APIRoute):
    """An API route that refuses query parameters it does not declare (a typo never silently does nothing) and
    answers an unexpected exception with a generic JSON 500 (the details go to the log, never to the client)."""

    def get_route_handler(self) -> Callable[[Request], Awaitable[Response]]:
        handler = super().get_route_handler()
        fields = _query_fields(self.dependant)
        allowed = {field.alias for field in fields}
        single = {field.alias for field in fields if not _is_sequence(field)}

        async def strict_handler(request: Request) -> Response:
            params = request.query_params
            unknown = sorted({name for name in params if name not in allowed})
            if unknown:
                return _json_error(422, _clip(_unknown_params_message(unknown, allowed)))
            repeated = sorted(name for name in single if len(params.getlist(name)) > 1)
            if repeated:
                return _json_error(422, f"query parameter(s) {repeated} given more than once; give each once")
            try:
                return await handler(request)
            except (StarletteHTTPException, RequestValidationError):
                raise
            except Exception as exc:  # a bug, not bad input: a generic 500 here keeps the connection alive
                return await _internal_error(request, exc)

        return strict_handler


# -- hosts, auth, body limit (one ASGI guard, in that order) --------------------------------------------------


def _check_host_patterns(patterns: Sequence[str]) -> tuple[frozenset[str], tuple[str, ...], bool]:
    if isinstance(patterns, str) or not isinstance(patterns, Sequence):
        msg = "allowed_hosts must be a list of host names"
        raise InvalidTypeError(msg)
    exact: set[str] = set()
    suffixes: list[str] = []
    for raw in patterns:
        if not isinstance(raw, str):
            msg = f"allowed_hosts: a host name must be a string, got {raw!r}"
            raise InvalidTypeError(msg)
        pattern = raw.strip().lower()
        if pattern.startswith("[") and pattern.endswith("]"):
            pattern = pattern[1:-1]
        if pattern == "*":
            return frozenset(), (), True
        bad = not pattern or any(c.isspace() or c in "/@?#" for c in pattern) or "*" in pattern[2:]
        if pattern.startswith("*") and not (pattern.startswith("*.") and len(pattern) > 2):
            bad = True
        if bad:
            msg = (f"allowed_hosts: {raw!r} is not a host name; use a name (search.internal), an address, "
                   "'*.example.com' for subdomains or '*' for any host")
            raise InvalidArgumentError(msg)
        if pattern.startswith("*."):
            suffixes.append(pattern[1:])
        else:
            exact.add(pattern)
    return frozenset(exact), tuple(suffixes), False


def _host_name(raw: str | None) -> str | None:
    """The host of a ``Host`` header (port dropped, IPv6 brackets removed), or None when malformed."""
    if raw is None:
        return None
    value = raw.strip().lower()
    if value.startswith("["):
        end = value.find("]")
        if end < 0:
            return None
        name, rest = value[1:end], value[end + 1:]
        if rest and not (rest.startswith(":") and rest[1:].isdigit()):
            return None
        return name or None
    name, sep, port = value.partition(":")
    if sep and not port.isdigit():
        return None
    return name or None


def _key_digest(key: str | bytes) -> bytes:
    return hashlib.sha256(key if isinstance(key, bytes) else key.encode("utf-8")).digest()


class _Guard:
    """Pure ASGI: Host check (400), bearer auth (401, not on ``/health``), body limit (413), before the app."""

    def __init__(self, app: Any, *, hosts: tuple[frozenset[str], tuple[str, ...], bool], key: bytes | None,
                 max_body: int) -> None:
        self.app = app
        self.exact, self.suffixes, self.any_host = hosts
        self.key = key
        self.max_body = max_body

    def _host_ok(self, raw: str | None) -> bool:
        if self.any_host:
            return True
        name = _host_name(raw)
        return name is not None and (name in self.exact or any(name.endswith(s) for s in self.suffixes))

    def _auth_ok(self, raw: bytes | None) -> bool:
        token = b""
        if raw is not None:
            scheme, _, rest = raw.strip().partition(b" ")
            if scheme.lower() == b"bearer":
                token = rest.strip()
        # hash both sides: compare_digest is then constant-time in the key's length too
        ok = hmac.compare_digest(_key_digest(token), self.key)  # type: ignore[arg-type]
        return ok and bool(token)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "websocket":  # no websocket routes: refuse before any check could be skipped
            await send({"type": "websocket.close", "code": 1008})
            return
        if scope["type"] != "http":  # lifespan
            await self.app(scope, receive, send)
            return
        headers: dict[bytes, bytes] = {}
        for name, value in scope.get("headers", ()):
            headers.setdefault(name.lower(), value)
        raw_host = headers.get(b"host")
        if not self._host_ok(None if raw_host is None else raw_host.decode("latin-1")):
            reply = _json_error(400, "invalid Host header: this host is not allowed (see --allowed-host)")
            await reply(scope, receive, send)
            return
        if self.key is not None and scope.get("path") not in _OPEN_PATHS and not self._auth_ok(
                headers.get(b"authorization")):
            reply = _json_error(401, "missing or wrong API key: send 'Authorization: Bearer <key>'",
                                {"WWW-Authenticate": 'Bearer realm="rrf-retriever"'})
            await reply(scope, receive, send)
            return
        length = headers.get(b"content-length")
        if length is not None:
            text = length.decode("latin-1").strip()
            if not (text.isascii() and text.isdigit()):
                await _json_error(400, "invalid Content-Length header")(scope, receive, send)
                return
            if int(text) > self.max_body:
                await self._too_large(scope, receive, send)
                return
        # Read the body here, counting; never hold more than max_body bytes.
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":  # the client went away
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_body:
                await self._too_large(scope, receive, send)
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        replayed = False

        async def replay() -> dict[str, Any]:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    async def _too_large(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        reply = _json_error(413, f"request body too large: at most {self.max_body} bytes (see --max-body)",
                            {"Connection": "close"})
        await reply(scope, receive, send)


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

    Raises:
        InvalidArgumentError / InvalidTypeError: an empty ``api_key``, a bad host pattern or ``max_body``.

    Example:
        >>> from rrf_retriever.stores.fts5 import FTS5KeywordStore  # doctest: +SKIP
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
        key = _key_digest(api_key)
    hosts = _check_host_patterns(DEFAULT_ALLOWED_HOSTS if allowed_hosts is None else allowed_hosts)
    if isinstance(max_body, bool) or not isinstance(max_body, int) or max_body < 1:
        msg = f"max_body must be a positive number of bytes, got {max_body!r}"
        raise InvalidArgumentError(msg)

    app = FastAPI(
        title=title,
        description=(
            "Hybrid retrieval (dense + keyword) fused with weighted Reciprocal Rank Fusion. Settings are camelCase; "
            "in this API `k` is the RRF constant (rrf_k, default 2) and `topK` is the number of results. Unknown "
            "query parameters and body fields are refused (422)."
            + (" Every route but /health needs `Authorization: Bearer <key>`." if key else "")
        ),
    )
    app.router.route_class = _StrictQueryRoute
    app.add_exception_handler(RequestValidationError, _validation_error)  # type: ignore[arg-type]
    app.add_exception_handler(StarletteHTTPException, _http_error)  # type: ignore[arg-type]
    app.add_exception_handler(Exception, _internal_error)
    app.add_middleware(_Guard, hosts=hosts, key=key, max_body=max_body)  # type: ignore[arg-type]
    patch_lock = threading.Lock()  # PATCHes are read-modify-write: serialise them (searches never wait)
    write_lock = threading.Lock()  # a write and its manifest refresh go together

    @app.get("/health")
    def health() -> dict[str, Any]:
        """Liveness and the document count per store (no API key needed)."""
        return {"status": "ok", "documents": engine.count()}

    @app.get("/settings", response_model=SettingsView)
    def get_settings() -> SettingsView:
        """The current settings snapshot."""
        return _view(engine)

    @app.patch("/settings", response_model=SettingsView)
    def patch_settings(patch: SettingsPatch) -> SettingsView:
        """Change some settings; all or nothing, effective from the next request."""
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
            if "top_k" in changes or "fetch_k" in changes:
                top_k = changes.get("top_k", engine.settings.top_k)
                fetch_k = changes.get("fetch_k", engine.settings.fetch_k)
                if fetch_k is not None and fetch_k < top_k:
                    msg = (f"fetchK ({fetch_k}) is below topK ({top_k}): each leg must fetch at least topK hits; "
                           "raise fetchK or set it to null (2 * topK)")
                    raise HTTPException(422, msg)
            if changes:
                try:
                    engine.update_settings(**changes)
                except RRFRetrieverError as exc:
                    raise _engine_error(exc) from exc
            return _view(engine)

    async def run_search(text: str, **kwargs: Any) -> JSONResponse:
        try:
            result = await engine.asearch(text, **kwargs)
        except RRFRetrieverError as exc:
            raise _engine_error(exc) from exc
        return JSONResponse({"query": text, **public_result_dict(result)})

    @app.get("/search")
    async def search(
        q: Annotated[str, Query(description="The query text.", max_length=_MAX_QUERY_CHARS)],
        top_k: Annotated[Optional[int], Query(ge=1, le=MAX_TOP_K, description="Results (default: topK).")] = None,  # noqa: UP045
        session_ids: Annotated[Optional[list[str]], Query(  # noqa: UP045
            description="Comma list: only these sessions (repeatable; empty is a 422).")] = None,
        session_ids_alias: Annotated[Optional[list[str]], Query(  # noqa: UP045
            alias="sessionIds", description="Alias of session_ids (the seed client's spelling).")] = None,
        exclude_ids: Annotated[Optional[list[str]], Query(  # noqa: UP045
            description="Comma list of ids never to return (repeatable).")] = None,
    ) -> JSONResponse:
        """Hybrid search; the hits carry their fused score, per-leg ranks and raw scores; plus the trace."""
        if session_ids is not None and session_ids_alias is not None:
            raise HTTPException(422, "give session_ids or sessionIds, not both")
        flt = None
        if session_ids is not None:
            flt = {"session_id": _session_values("session_ids", session_ids)}
        elif session_ids_alias is not None:
            flt = {"session_id": _session_values("sessionIds", session_ids_alias)}
        return await run_search(q, top_k=top_k, filter=flt, exclude_ids=_id_list(exclude_ids))

    @app.post("/search")
    async def search_json(body: SearchRequest) -> JSONResponse:
        """Hybrid search with the full filter language as JSON (an empty any-of list matches nothing)."""
        return await run_search(body.text, top_k=body.top_k, filter=body.filter, exclude_ids=body.exclude_ids,
                                weights=body.weights, offset=body.offset, score_threshold=body.score_threshold,
                                pinned_ids=body.pinned_ids, query_vector=body.query_vector, diversity=body.diversity,
                                reranker=False if body.rerank is False else None, rerank_k=body.rerank_k,
                                dense_paths=body.dense_paths, expand_limit=body.expand_limit)

    def refresh_manifest() -> None:
        if index_path is not None:
            from rrf_retriever.layout import save_manifest

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
                raise _engine_error(exc) from exc
        return WrittenIds(ids=list(ids))

    @app.delete("/documents", response_model=WrittenIds)
    def delete_documents(body: DeleteDocuments) -> WrittenIds:
        """Delete ids from every store (missing ids are no error)."""
        with write_lock:
            try:
                engine.delete(body.ids)
                refresh_manifest()
            except RRFRetrieverError as exc:
                raise _engine_error(exc) from exc
        return WrittenIds(ids=body.ids)

    if key is not None:
        _declare_bearer(app)
    return app


def _declare_bearer(app: FastAPI) -> None:
    """Show the bearer scheme in the OpenAPI document (the docs' Authorize button)."""
    build = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = build()
            schema.setdefault("components", {}).setdefault("securitySchemes", {})["bearer"] = {
                "type": "http", "scheme": "bearer"}
            for path, operations in schema.get("paths", {}).items():
                if path not in _OPEN_PATHS:
                    for operation in operations.values():
                        operation["security"] = [{"bearer": []}]
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
