"""The settings service (extra ``server``): tune a running retriever over HTTP, as a memory service does.

Endpoints (OpenAPI docs at ``/docs``):

- ``GET /settings`` -> ``{"semanticWeight", "keywordWeight", "topK", "k", "fetchK"}``.
- ``PATCH /settings`` with any subset of those keys (camelCase JSON). **In this API ``k`` is the RRF constant
  (``rrf_k``, default 2)**, as the seed memory service names it, and ``topK`` is the number of results;
  ``fetchK`` is the hits each leg fetches (``null`` = ``2 * topK``). Validated: an unknown key, a wrong type,
  NaN/infinity, a negative weight or ``k``, ``topK``/``fetchK`` outside 1..10000, or both weights 0 -> 422 and
  nothing changes. A valid change is one atomic settings swap: the next request uses it, no restart.
- ``GET /search?q=...&top_k=5&session_ids=1,2,3&exclude_ids=a,b`` -> hits (id, text, metadata, score, ranks,
  scores) and the trace (per-leg latency, hits, errors; the weights used). ``session_ids`` becomes the filter
  ``{"session_id": [1, 2, 3]}``, applied inside every store before its top-k.
- ``GET /health`` -> ``{"status": "ok", "documents": {...}}``.

Example:
    >>> from rrf_retriever.layout import open_index  # doctest: +SKIP
    >>> app = create_app(open_index(".idx"))  # doctest: +SKIP
    >>> import uvicorn; uvicorn.run(app, port=8000)  # doctest: +SKIP
"""

from __future__ import annotations

import math
import threading
from typing import Annotated, Any, Optional

try:
    from fastapi import FastAPI, HTTPException, Query, Request
    from fastapi.encoders import jsonable_encoder
    from fastapi.exceptions import RequestValidationError
    from fastapi.responses import JSONResponse
    from pydantic import BaseModel, ConfigDict, Field, model_validator
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    from rrf_retriever.errors import missing_dependency

    raise missing_dependency(exc.name or "fastapi", "server", "the settings service") from exc

from rrf_retriever.engine import MAX_TOP_K, HybridEngine
from rrf_retriever.errors import AllLegsFailedError, RRFRetrieverError
from rrf_retriever.scope import parse_filter_values

__all__ = ["SettingsPatch", "SettingsView", "create_app"]

_Weight = Annotated[float, Field(ge=0, allow_inf_nan=False)]
_Count = Annotated[int, Field(ge=1, le=MAX_TOP_K)]


class SettingsView(BaseModel):
    """The tunable settings, camelCase. ``k`` is the RRF constant (rrf_k); ``topK`` the number of results."""

    semanticWeight: float = Field(description="Weight of the dense (semantic) leg(s), >= 0.")
    keywordWeight: float = Field(description="Weight of the keyword (BM25) leg(s), >= 0.")
    topK: int = Field(description="Number of fused results returned per query (1..10000).")
    k: float = Field(description="The RRF constant (rrf_k): score = sum w / (k + rank). NOT the result count.")
    fetchK: Optional[int] = Field(description="Hits each leg fetches; null means 2 * topK.")  # noqa: UP045


class SettingsPatch(BaseModel):
    """A partial settings change; unknown keys are refused (422)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    semanticWeight: Optional[_Weight] = None  # noqa: UP045
    keywordWeight: Optional[_Weight] = None  # noqa: UP045
    topK: Optional[_Count] = None  # noqa: UP045
    k: Optional[Annotated[float, Field(ge=0, allow_inf_nan=False, description="The RRF constant (rrf_k).")]] = None  # noqa: UP045
    fetchK: Optional[_Count] = None  # noqa: UP045

    @model_validator(mode="after")
    def _no_null_except_fetch_k(self) -> SettingsPatch:
        for name in ("semanticWeight", "keywordWeight", "topK", "k"):
            if name in self.model_fields_set and getattr(self, name) is None:
                msg = f"{name} cannot be null"
                raise ValueError(msg)
        return self


def _legs_of_kind(engine: HybridEngine, kind: str) -> list[str]:
    return [name for name, leg in engine.legs.items() if leg.kind == kind]


def _view(engine: HybridEngine) -> SettingsView:
    s = engine.settings

    def weight(kind: str) -> float:
        names = _legs_of_kind(engine, kind)
        return s.weights[names[0]] if names else 0.0

    return SettingsView(semanticWeight=weight("dense"), keywordWeight=weight("keyword"), topK=s.top_k,
                        k=s.rrf_k, fetchK=s.fetch_k)


def _id_list(raw: str | None) -> list[str] | None:
    """``a,b`` -> ``["a", "b"]`` (ids stay strings)."""
    return [v.strip() for v in raw.split(",") if v.strip()] if raw else None


def _json_safe(value: Any) -> Any:
    """NaN and infinity as strings: a 422 that echoes ``NaN`` back must still be valid JSON."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    return value


async def _validation_error(request: Request, exc: RequestValidationError) -> JSONResponse:
    # FastAPI's own handler echoes the input; a NaN input would make it fail with a 500.
    return JSONResponse({"detail": _json_safe(jsonable_encoder(exc.errors()))}, status_code=422)


def create_app(engine: HybridEngine, *, title: str = "rrf-retriever settings service") -> FastAPI:
    """Build the FastAPI app around any :class:`~rrf_retriever.engine.HybridEngine`.

    Example:
        >>> from rrf_retriever.stores.fts5 import FTS5KeywordStore  # doctest: +SKIP
        >>> app = create_app(HybridEngine({"keyword": FTS5KeywordStore()}))  # doctest: +SKIP
    """
    app = FastAPI(
        title=title,
        description=(
            "Hybrid retrieval (dense + keyword) fused with weighted Reciprocal Rank Fusion. Settings are camelCase; "
            "in this API `k` is the RRF constant (rrf_k, default 2) and `topK` is the number of results."
        ),
    )
    app.add_exception_handler(RequestValidationError, _validation_error)  # type: ignore[arg-type]
    patch_lock = threading.Lock()  # PATCHes are read-modify-write: serialise them (searches never wait)

    @app.get("/health")
    def health() -> dict[str, Any]:
        """Liveness and the document count per store."""
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
            if changes:
                try:
                    engine.update_settings(**changes)
                except RRFRetrieverError as exc:
                    raise HTTPException(422, str(exc)) from exc
            return _view(engine)

    @app.get("/search")
    async def search(
        q: Annotated[str, Query(description="The query text.", max_length=10_000)],
        top_k: Annotated[Optional[int], Query(ge=1, le=MAX_TOP_K, description="Results (default: topK).")] = None,  # noqa: UP045
        session_ids: Annotated[Optional[str], Query(description="Comma list: only these sessions.")] = None,  # noqa: UP045
        exclude_ids: Annotated[Optional[str], Query(description="Comma list of ids never to return.")] = None,  # noqa: UP045
    ) -> JSONResponse:
        """Hybrid search; the hits carry their fused score, per-leg ranks and raw scores; plus the trace."""
        sessions = parse_filter_values(session_ids) if session_ids else None
        flt = {"session_id": sessions} if sessions else None
        try:
            result = await engine.asearch(q, top_k=top_k, filter=flt,
                                          exclude_ids=_id_list(exclude_ids))
        except AllLegsFailedError as exc:
            raise HTTPException(503, str(exc)) from exc
        except RRFRetrieverError as exc:
            raise HTTPException(422, str(exc)) from exc
        return JSONResponse({"query": q, **result.to_dict()})

    return app
