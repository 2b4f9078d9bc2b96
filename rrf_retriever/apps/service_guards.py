"""The settings service's guards (:mod:`rrf_retriever.apps.service`): JSON error replies that never echo the
input, routes that refuse unknown query parameters and JSON bodies that repeat a key, and the ASGI guard (allowed
hosts, bearer auth, body limit).
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import re
import types
import typing
from collections.abc import Callable, Coroutine, Sequence
from typing import Any

try:
    from fastapi import HTTPException, Request
    from fastapi.exceptions import RequestValidationError
    from fastapi.responses import JSONResponse, Response
    from fastapi.routing import APIRoute
    from starlette.exceptions import HTTPException as StarletteHTTPException
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    from rrf_retriever.errors import missing_dependency

    raise missing_dependency(exc.name or "fastapi", "server", "the settings service") from exc

from rrf_retriever.errors import InvalidArgumentError, InvalidTypeError, RRFRetrieverError
from rrf_retriever.strict_json import DuplicateKeyError
from rrf_retriever.strict_json import loads as strict_loads

# The service's logger name, as before the split (log configuration and filters keep working).
logger = logging.getLogger("rrf_retriever.apps.service")

#: Routes served without the API key: liveness, and the static docs page (no data; see apps/service_docs.py).
OPEN_PATHS = frozenset({"/health", "/docs"})
#: Hints for the spellings a seed client may send.
_PARAM_HINTS = {"topK": "top_k", "excludeIds": "exclude_ids", "recentIds": "exclude_ids",
                "session_id": "session_ids", "sessionId": "sessionIds", "query": "q", "k": "top_k"}

_UNIONS = (typing.Union, types.UnionType)


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


async def validation_error(request: Request, exc: RequestValidationError) -> JSONResponse:
    # FastAPI's own handler echoes the input (a huge input comes back whole; NaN breaks the JSON): never the input.
    errors = []
    for err in exc.errors()[:20]:
        errors.append({
            "loc": [_clip_loc(part) for part in err.get("loc", ())][:10],
            "msg": _clip(str(err.get("msg", ""))),
            "type": _clip(str(err.get("type", ""))),
        })
    return _json_error(422, errors)


async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
    detail = _clip(exc.detail) if isinstance(exc.detail, str) else exc.detail
    return _json_error(exc.status_code, detail, getattr(exc, "headers", None))


async def internal_error(request: Request, exc: Exception) -> JSONResponse:
    logger.error("rrf-retriever service: unexpected error on %s %s", request.method, request.url.path,
                 exc_info=exc)
    return _json_error(500, "internal error (see the server log)")


def engine_error(exc: RRFRetrieverError) -> HTTPException:
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


async def repeated_key_error(request: Request) -> JSONResponse | None:
    """A 422 (the validation errors' shape, ``type`` ``json_duplicate_key``) when the JSON body repeats a key at
    any depth, else None. The body (already held by :class:`Guard`, at most ``max_body`` bytes) is read through
    the strict loader before FastAPI parses it; a body that is not JSON is left to FastAPI's own answer."""
    body = await request.body()  # kept by the request: FastAPI reads the same bytes
    if not body:
        return None
    try:
        strict_loads(body, what="the JSON body")
    except DuplicateKeyError as exc:
        error = {"loc": ["body", *(_clip_loc(part) for part in exc.path)][:10], "msg": _clip(str(exc)),
                 "type": "json_duplicate_key"}
        return _json_error(422, [error])
    except (ValueError, RecursionError):  # not JSON, too deep: FastAPI answers as it always has
        return None
    return None


class StrictQueryRoute(APIRoute):
    """An API route that refuses query parameters it does not declare (a typo never silently does nothing) and a
    JSON body that repeats a key (:func:`repeated_key_error`), and answers an unexpected exception with a generic
    JSON 500 (the details go to the log, never to the client)."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()
        fields = _query_fields(self.dependant)
        allowed = {field.alias for field in fields}
        single = {field.alias for field in fields if not _is_sequence(field)}
        takes_body = self.body_field is not None

        async def strict_handler(request: Request) -> Response:
            params = request.query_params
            unknown = sorted({name for name in params if name not in allowed})
            if unknown:
                return _json_error(422, _clip(_unknown_params_message(unknown, allowed)))
            repeated = sorted(name for name in single if len(params.getlist(name)) > 1)
            if repeated:
                return _json_error(422, f"query parameter(s) {repeated} given more than once; give each once")
            if takes_body:
                refused = await repeated_key_error(request)
                if refused is not None:
                    return refused
            try:
                return await handler(request)
            except (StarletteHTTPException, RequestValidationError):
                raise
            except Exception as exc:  # a bug, not bad input: a generic 500 here keeps the connection alive
                return await internal_error(request, exc)

        return strict_handler


# -- hosts, auth, body limit (one ASGI guard, in that order) --------------------------------------------------


def check_host_patterns(patterns: Sequence[str]) -> tuple[frozenset[str], tuple[str, ...], bool]:
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


def key_digest(key: str | bytes) -> bytes:
    return hashlib.sha256(key if isinstance(key, bytes) else key.encode("utf-8")).digest()


class Guard:
    """Pure ASGI: Host check (400), bearer auth (401, not on :data:`OPEN_PATHS`), body limit (413), before the app."""

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
        ok = hmac.compare_digest(key_digest(token), self.key)  # type: ignore[arg-type]  # only called with a key
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
        if self.key is not None and scope.get("path") not in OPEN_PATHS and not self._auth_ok(
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
