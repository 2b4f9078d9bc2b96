"""The per-call search options: ONE definition, :class:`SearchOptions`, that every surface derives from.

Each option is one field below: its default, its doc and its check. The options are validated once, when they are
built; :meth:`HybridEngine.search <rrf_retriever.engine.HybridEngine.search>` reads them. The names the framework
retrievers accept as search keywords (``invoke(query, **kwargs)``, ``search_kwargs``, ``scoped``) are
:data:`OPTION_NAMES` plus the aliases of :data:`OPTION_ALIASES` (LangChain's ``k`` is ``top_k``); the CLI and the
service each build the options in one function. Adding an option is: its field here, and the stage that reads it
(:data:`~rrf_retriever.engine.stages.STAGES`).

Example:
    >>> options = SearchOptions.from_kwargs(k=3, exclude_ids=["a"])
    >>> options.top_k, options.offset, sorted(options.exclude_ids)
    (3, 0, ['a'])
    >>> SearchOptions.from_kwargs(topk=3)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    rrf_retriever.errors.InvalidArgumentError: unknown search argument(s) ['topk']; accepted: [...] (rrf_k is a setting)
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from types import MappingProxyType
from typing import Any, cast

from rrf_retriever.engine.paths import Unscoped
from rrf_retriever.engine.rerank import check_reranker, default_rerank_k
from rrf_retriever.engine.settings import RetrievalSettings, check_dense_paths, check_diversity
from rrf_retriever.errors import InvalidArgumentError, InvalidTypeError
from rrf_retriever.scope.parse import Scope, normalize_exclude_ids, normalize_filter
from rrf_retriever.scope.tree import FilterSpec, NormalizedFilter
from rrf_retriever.validate import MAX_TOP_K, check_ids, check_int, check_number, check_top_k, check_weight_values
from rrf_retriever.vectors import to_float_vector

__all__ = ["OPTION_ALIASES", "OPTION_NAMES", "SearchOptions", "as_options", "check_option_names", "resolve_top_k"]


def _meta(check: Callable[[Any], Any], doc: str) -> dict[str, Any]:
    """What a field of :class:`SearchOptions` says besides its default: the check that validates (and normalizes)
    a given value, and its doc (shown in the class's doc and by ``SearchOptions.doc(name)``)."""
    return {"check": check, "doc": doc}


def _check_depths(values: Mapping[str, Any]) -> None:
    """The one check across options: a given ``fetch_k`` is not below a given ``top_k``."""
    fetch_k, top_k = values["fetch_k"], values["top_k"]
    if fetch_k is not None and top_k is not None and fetch_k < top_k:  # below the settings' top_k: raised to it
        msg = (f"fetch_k ({fetch_k}) is below top_k ({top_k}): each leg must fetch at least top_k hits; raise "
               "fetch_k or leave it out")
        raise InvalidArgumentError(msg)


@dataclass(frozen=True, kw_only=True)
class SearchOptions:
    """The options of one search, validated when built (an invalid value raises our error naming the option).

    None (and ``offset=0``) means "not given": the settings' value where the option has a setting, else the stage
    is off. Values are kept normalized: ``filter`` as its filter tree, ``exclude_ids`` as a frozenset,
    ``pinned_ids`` as a tuple, ``query_vector`` as a list of floats. ``dataclasses.replace`` validates again.

    Example:
        >>> SearchOptions(top_k=5, pinned_ids=["p", "p"]).pinned_ids
        ('p',)
        >>> SearchOptions(diversity=2.0)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        rrf_retriever.errors.InvalidArgumentError: diversity (the MMR lambda) must be ... got 2.0
    """

    top_k: int | None = field(default=None, metadata=_meta(
        check_top_k,
        "Results to return (default: the settings' ``top_k``)."))
    filter: FilterSpec | NormalizedFilter | None = field(default=None, metadata=_meta(
        normalize_filter,
        '``{"session_id": [1, 2], "lang": "en"}`` (the language of :mod:`rrf_retriever.scope.tree`), applied inside '
        "every store before its top-k."))
    exclude_ids: Iterable[str] | None = field(default=None, metadata=_meta(
        normalize_exclude_ids,
        "Ids never to return (removed inside every store before its top-k)."))
    weights: Mapping[str, float] | None = field(default=None, metadata=_meta(
        lambda w: MappingProxyType(check_weight_values(w)),
        "Per-call weights by source (or dense path) name, merged over the settings' weights (each a finite number "
        "from 0 to 1,000: checked here, once; which names are sources, the engine resolves)."))
    offset: int = field(default=0, metadata=_meta(
        lambda n: check_int(n, "offset", 0, MAX_TOP_K),
        "Skip this many results: a page of ONE fused list (the legs fetch ``fetch_k`` whatever the offset)."))
    query_vector: Sequence[float] | None = field(default=None, metadata=_meta(
        lambda v: to_float_vector(v, "query_vector"),
        "Use this query vector for the dense legs instead of embedding the query (a vector shared with other "
        "lookups). Of the dense store's dimension: another length is a ``DimensionMismatchError`` before any leg "
        "runs (a store never written has no dimension yet: any length is taken, and the dense leg finds nothing)."))
    score_threshold: float | None = field(default=None, metadata=_meta(
        lambda t: check_number(t, "score_threshold", high=1.0),
        "Keep hits whose ``normalized_score`` (score / best possible score, in [0, 1]) reaches it; pinned hits stay."))
    pinned_ids: Iterable[str] | None = field(default=None, metadata=_meta(
        lambda ids: tuple(check_ids(ids, "pinned_ids")[:MAX_TOP_K]),
        'Ids always in the first page when they pass the scope (``metadata["rrf_pinned"]``); a reranker or '
        "diversity never takes them out."))
    diversity: float | None = field(default=None, metadata=_meta(
        check_diversity,
        "MMR lambda in [0, 1] over the candidates' stored dense vectors (1: the fused order); None: the settings' "
        "(default off). See :func:`~rrf_retriever.engine.stages.diversify`."))
    reranker: Any = field(default=None, metadata=_meta(
        lambda r: False if r is False else check_reranker(r),
        "A callable ``(query, texts) -> scores`` or an object with ``rerank_hits`` "
        "(:mod:`~rrf_retriever.engine.rerank`); None: the settings'; False: none for this call. The hits keep their "
        'fused ``score`` and ranks; ``metadata["rrf_rerank_score"]`` holds the reranker\'s.'))
    rerank_k: int | None = field(default=None, metadata=_meta(
        lambda n: check_top_k(n, "rerank_k"),
        "Candidates the reranker sees (default ``max(2 * top_k, 20)``)."))
    dense_paths: Mapping[str, FilterSpec | Unscoped | None] | None = field(default=None, metadata=_meta(
        check_dense_paths,
        "``{name: filter or None}``: extra dense legs over the main dense store, each searching with ``filter`` AND "
        "its own (None: ``filter`` alone; ``UNSCOPED``: the whole store, single-tenant only; ``exclude_ids`` "
        "always apply), weighted by ``weights[name]`` (default: the dense leg's); the query is embedded once for "
        "all of them. None: the settings'."))
    expand_limit: int | None = field(default=None, metadata=_meta(
        lambda n: check_top_k(n, "expand_limit"),
        "At most this many 1-hop neighbours (default ``top_k``), with the engine's ``expand`` / ``links_key``."))
    fetch_k: int | None = field(default=None, metadata=_meta(
        lambda n: check_top_k(n, "fetch_k"),
        "Hits each leg fetches for this call (the candidate depth: Qdrant's prefetch ``limit``, Elasticsearch's "
        "``rank_window_size``), 1 to ``MAX_TOP_K`` (10,000) and not below ``top_k``; also the candidates the "
        "diversity stage (MMR) re-orders, as LangChain's ``fetch_k``. None: the settings' (``max(2 * top_k, 40)`` "
        "unless ``fetch_k`` is set)."))

    def __post_init__(self) -> None:
        values = vars(self)
        for name, default, check in _CHECKS:
            value = values[name]
            if value is None and default is None:
                continue  # not given
            values[name] = check(value)  # into the instance dict: frozen refuses setattr, object.__setattr__ is slower
        _check_depths(values)

    @property
    def scope(self) -> Scope:
        """The filter (parsed when the options were built) and the excluded ids, as the legs' requests carry them
        (:class:`~rrf_retriever.stores.base.SearchRequest`): nothing parses them again.

        Example:
            >>> SearchOptions(filter={"lang": "en"}).scope
            Scope(filter=Match(key='lang', values=('en',)), exclude_ids=frozenset())
        """
        excluded = cast("frozenset[str] | None", self.exclude_ids)
        return Scope(cast("NormalizedFilter | None", self.filter), excluded or frozenset())

    @staticmethod
    def doc(name: str) -> str:
        """The doc of option ``name``.

        Example:
            >>> SearchOptions.doc("rerank_k")
            'Candidates the reranker sees (default ``max(2 * top_k, 20)``).'
        """
        check_option_names([name])
        return str(_BY_NAME[OPTION_ALIASES.get(name, name)].metadata["doc"])

    @classmethod
    def from_kwargs(cls, **kwargs: Any) -> SearchOptions:
        """The options named by keyword (``k`` is an alias of ``top_k``); an unknown name is refused.

        Raises:
            InvalidArgumentError: an unknown name (the message lists the accepted ones), ``k`` and ``top_k`` that
                differ, or an invalid value.
        """
        return as_options(None, **kwargs)

    def merged(self, **kwargs: Any) -> SearchOptions:
        """These options with ``kwargs`` over them (``k`` is ``top_k``): only ``kwargs`` are validated, these
        options' values were when they were built (a filter is not parsed again).

        Example:
            >>> SearchOptions(top_k=3, offset=6).merged(k=4).top_k
            4
        """
        if not kwargs:
            return self
        check_option_names(kwargs)
        if "k" in kwargs:
            kwargs["top_k"] = resolve_top_k(kwargs.pop("top_k", None), kwargs.pop("k"))
        given = SearchOptions(**kwargs)
        if self is _DEFAULT:
            return given
        out = object.__new__(SearchOptions)  # a copy, not built again: as resolved()
        vars(out).update(vars(self), **{name: vars(given)[name] for name in kwargs})
        _check_depths(vars(out))
        return out

    def resolved(self, settings: RetrievalSettings) -> SearchOptions:
        """These options as one query reads them: an option left to the settings takes the settings' value
        (``top_k``, ``diversity``, ``reranker``, ``rerank_k``, ``dense_paths``, ``expand_limit``);
        ``reranker=False`` becomes None, and ``rerank_k`` is the number of candidates the reranker sees (0 without
        one). Not validated again: the values were, and a resolved ``rerank_k`` may be 0.

        Example:
            >>> settings = RetrievalSettings(weights={"keyword": 1.0}, top_k=7)
            >>> resolved = SearchOptions(reranker=False).resolved(settings)
            >>> resolved.top_k, resolved.reranker, resolved.rerank_k
            (7, None, 0)
        """
        top_k = settings.top_k if self.top_k is None else self.top_k
        reranker = settings.reranker if self.reranker is None else None if self.reranker is False else self.reranker
        depth = settings.rerank_k if self.rerank_k is None else self.rerank_k
        out = object.__new__(SearchOptions)  # a copy, not built again: its values are checked already
        vars(out).update(
            vars(self),
            top_k=top_k,
            diversity=settings.diversity if self.diversity is None else self.diversity,
            reranker=reranker,
            rerank_k=default_rerank_k(top_k, depth) if reranker is not None else 0,
            dense_paths=settings.dense_paths if self.dense_paths is None else self.dense_paths,
            expand_limit=settings.expand_limit if self.expand_limit is None else self.expand_limit,
        )
        return out


_FIELDS = fields(SearchOptions)
_BY_NAME = {f.name: f for f in _FIELDS}
_CHECKS = tuple((f.name, f.default, f.metadata["check"]) for f in _FIELDS)
#: Every option's name: what ``HybridEngine.search`` takes as keywords (with the aliases).
OPTION_NAMES: frozenset[str] = frozenset(_BY_NAME)
#: Other names accepted for an option: LangChain's ``k`` is the number of results, never the RRF constant.
OPTION_ALIASES: Mapping[str, str] = MappingProxyType({"k": "top_k"})
_ACCEPTED = sorted(OPTION_NAMES | set(OPTION_ALIASES))
_DEFAULT = SearchOptions()
_summary, _example = (SearchOptions.__doc__ or "").split("    Example:", 1)
SearchOptions.__doc__ = _summary + "    Attributes:\n" + "".join(  # the fields' docs, written once: on the fields
    f"        {f.name}: {f.metadata['doc']}\n" for f in _FIELDS) + "\n    Example:" + _example


def check_option_names(names: Iterable[str]) -> None:
    """Refuse a name that is neither an option nor an alias: a typo never silently does nothing.

    Raises:
        InvalidArgumentError: the message lists the unknown names and the accepted ones.

    Example:
        >>> check_option_names(["k", "filter"])
    """
    unknown = sorted(set(names) - OPTION_NAMES - OPTION_ALIASES.keys())
    if unknown:
        msg = f"unknown search argument(s) {unknown}; accepted: {_ACCEPTED} (rrf_k is a setting)"
        raise InvalidArgumentError(msg)


def resolve_top_k(top_k: int | None, k: int | None) -> int | None:
    """``k`` is LangChain's name for the number of results: accept it as ``top_k``, never as the RRF constant.

    Raises:
        InvalidArgumentError: both given and different, or not a valid ``top_k``.

    Example:
        >>> resolve_top_k(None, 4), resolve_top_k(None, None)
        (4, None)
    """
    if k is not None and top_k is not None and k != top_k:
        msg = f"k ({k}) and top_k ({top_k}) both given and different; k is an alias of top_k"
        raise InvalidArgumentError(msg)
    value = top_k if top_k is not None else k
    return None if value is None else check_top_k(value)


def as_options(options: SearchOptions | None = None, /, **kwargs: Any) -> SearchOptions:
    """The options of one call: ``options`` (None: the defaults) with the keyword arguments over them, built once.

    Raises:
        InvalidTypeError: ``options`` is not a :class:`SearchOptions`.
        InvalidArgumentError: as :meth:`SearchOptions.from_kwargs`.

    Example:
        >>> as_options(SearchOptions(top_k=3), offset=3).offset
        3
    """
    if options is None:
        options = _DEFAULT
    elif not isinstance(options, SearchOptions):
        msg = (f"options must be a SearchOptions, not {type(options).__name__}; give the search options as keywords "
               "(top_k=..., filter=...) or as SearchOptions(...)")
        raise InvalidTypeError(msg)
    return options.merged(**kwargs)
