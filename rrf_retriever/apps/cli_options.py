"""The command line's search options: the ``search`` and ``eval`` flags become one
:class:`~rrf_retriever.engine.options.SearchOptions`, in :func:`search_options`.

Flags with a syntax of their own are parsed here (``--filter`` / ``--where``, ``--dense-path``, the leg weights);
every other flag is given by its option's name and checked by the options themselves, so a bad value fails in one
line before the index is opened.

Example:
    >>> options = search_options(filters=["lang=en"], semantic_weight=0.5, top_k=3, exclude_ids=[])
    >>> options.top_k, dict(options.weights), options.exclude_ids
    (3, {'dense': 0.5}, None)
"""

from __future__ import annotations

import ipaddress
import json
import re
from collections.abc import Sequence
from typing import Any

from rrf_retriever import strict_json
from rrf_retriever.apps.console import UsageError
from rrf_retriever.engine.options import SearchOptions
from rrf_retriever.scope.cli_syntax import parse_filter_item
from rrf_retriever.scope.parse import normalize_filter
from rrf_retriever.validate import check_number

__all__ = ["check_host", "check_port", "parse_dense_paths", "parse_filters", "parse_weights", "search_options"]

_HOST_LABEL = re.compile(r"[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?")


def search_options(
    *,
    filters: Sequence[str] | None = None,
    filter_json: str | None = None,
    dense_path: Sequence[str] | None = None,
    semantic_weight: float | None = None,
    keyword_weight: float | None = None,
    **options: Any,
) -> SearchOptions:
    """The search options of one command: the flags parsed here, the others by their option's name (``top_k``,
    ``offset``, ...; a repeatable flag given no value is not given).

    Args:
        filters: The ``--filter`` items (:func:`parse_filters`).
        filter_json: ``--where`` / ``--filter-json``.
        dense_path: The ``--dense-path`` items (:func:`parse_dense_paths`).
        semantic_weight: ``--semantic-weight``, the dense leg's weight.
        keyword_weight: ``--keyword-weight``.
        **options: Every other option, by name.

    Raises:
        UsageError: a malformed flag.
        InvalidArgumentError / InvalidTypeError: a value the options refuse (the message names the option).
    """
    weights = parse_weights(semantic_weight, keyword_weight)
    flt = parse_filters(filters, filter_json)
    paths = parse_dense_paths(dense_path)
    given = {name: (value or None) if isinstance(value, (list, tuple)) else value for name, value in options.items()}
    return SearchOptions.from_kwargs(filter=flt, weights=weights, dense_paths=paths, **given)


def parse_filters(items: Sequence[str] | None, filter_json: str | None = None) -> dict[str, Any] | None:
    """``["session_id=1,2", "lang=en"]`` -> ``{"session_id": [1, 2], "lang": "en"}``.

    Each item is ``key=value``; ``key=v1,v2`` means any of them; a repeated key adds to its values. A plain value is
    an integer if it parses, else a string; ``key:str=42`` asks for the string "42" (a numeric-string id),
    ``key:int=7`` and ``key:bool=true`` for those types. ``filter_json`` (``--where`` / ``--filter-json``) is a
    JSON object in the full filter language (``'{"session_id": ["42"], "n": {"$gte": 3}}'``, ``$or``, ``$not``...,
    see :mod:`rrf_retriever.scope.tree`), combined with the items by AND. An empty value list (``key=``) is an error,
    not "no filter".

    Example:
        >>> parse_filters(["session_id=1,2", "lang=en", "id:str=42"])
        {'session_id': [1, 2], 'lang': 'en', 'id': '42'}
    """
    out: dict[str, list[Any]] = {}
    for item in items or ():
        key, values = parse_filter_item(item)
        out.setdefault(key, []).extend(values)
    flt: dict[str, Any] = {key: values[0] if len(values) == 1 else values for key, values in out.items()}
    if filter_json is not None:
        try:
            given = strict_json.loads(filter_json, what="--filter-json")
        except strict_json.DuplicateKeyError as exc:
            raise UsageError(str(exc)) from None
        except json.JSONDecodeError as exc:
            msg = f"--filter-json is not valid JSON ({exc.msg} at character {exc.pos})"
            raise UsageError(msg) from None
        if not isinstance(given, dict):
            msg = f"--filter-json must be a JSON object such as '{{\"session_id\": [\"42\"]}}', not {given!r}"
            raise UsageError(msg)
        flt = {"$and": [given, flt]} if given and flt else given or flt  # both must hold
    if not flt:
        return None
    normalize_filter(flt)  # a malformed filter fails here, in one line, before the index is opened
    return flt


def parse_dense_paths(items: Sequence[str] | None) -> dict[str, Any] | None:
    """``["all", 'recent={"year": 2024}']`` -> ``{"all": None, "recent": {"year": 2024}}`` (``--dense-path``).

    Example:
        >>> parse_dense_paths(["dense_all", 'two={"s": [2]}'])
        {'dense_all': None, 'two': {'s': [2]}}
    """
    if not items:
        return None
    paths: dict[str, Any] = {}
    for item in items:
        name, sep, raw = item.partition("=")
        if not name or name in paths:
            msg = f"--dense-path {item!r}: give NAME or NAME=FILTER_JSON, each name once"
            raise UsageError(msg)
        if not sep:
            paths[name] = None
            continue
        try:
            paths[name] = strict_json.loads(raw, what=f"--dense-path {name}")
        except strict_json.DuplicateKeyError as exc:
            raise UsageError(str(exc)) from None
        except json.JSONDecodeError as exc:
            msg = f"--dense-path {name}: the filter is not valid JSON ({exc.msg} at character {exc.pos})"
            raise UsageError(msg) from None
        if not isinstance(paths[name], dict):
            msg = f"--dense-path {name}: the filter must be a JSON object, not {paths[name]!r}"
            raise UsageError(msg)
    return paths


def parse_weights(semantic: float | None, keyword: float | None) -> dict[str, float] | None:
    """``--semantic-weight`` and ``--keyword-weight`` as per-call weights (None: neither given).

    Example:
        >>> parse_weights(0.5, None), parse_weights(None, None)
        ({'dense': 0.5}, None)
    """
    for name, value in (("--semantic-weight", semantic), ("--keyword-weight", keyword)):
        if value is not None:
            check_number(value, name)
    weights = {}
    if semantic is not None:
        weights["dense"] = semantic
    if keyword is not None:
        weights["keyword"] = keyword
    if weights and not any({"dense": 1.0, "keyword": 1.0, **weights}.values()):
        msg = "--semantic-weight and --keyword-weight are both 0: nothing would be searched"
        raise UsageError(msg)
    return weights or None


def check_host(host: str) -> str:
    """``serve --host``: an IP address (v4, or v6 without brackets, a zone such as ``%eth0`` allowed) or a host name
    (RFC 1123 labels: letters, digits, inner hyphens; at most 253 characters), checked before anything starts.

    Example:
        >>> check_host("0.0.0.0"), check_host("::1"), check_host("search.example.org")
        ('0.0.0.0', '::1', 'search.example.org')
        >>> check_host("http://localhost")  # doctest: +IGNORE_EXCEPTION_DETAIL
        Traceback (most recent call last):
        ...
        click.exceptions.BadParameter: 'http://localhost' is not an IP address or a host name ...

    Raises:
        typer.BadParameter: a malformed host (typer prints it as a usage error, exit code 2).
    """
    import typer

    try:
        ipaddress.ip_address(host)
        return host
    except ValueError:
        pass
    labels = host[:-1].split(".") if host.endswith(".") else host.split(".")
    # an all-numeric name is a mistyped address, not a host name (no top-level domain is numeric)
    if (0 < len(host) <= 253 and all(_HOST_LABEL.fullmatch(label) for label in labels)
            and not labels[-1].isdigit()):
        return host
    shown = repr(host) if len(host) <= 60 else repr(host[:57]) + "..."
    msg = f"{shown} is not an IP address or a host name (use 0.0.0.0 or :: for every interface)"
    raise typer.BadParameter(msg)


def check_port(port: int) -> int:
    """``serve --port``: 1 to 65535, checked before anything starts (uvicorn fails on another with a long traceback).

    Example:
        >>> check_port(8000)
        8000

    Raises:
        typer.BadParameter: a port out of range (typer prints it as a usage error, exit code 2).
    """
    import typer

    if not 1 <= port <= 65535:
        shown = str(port) if len(str(port)) <= 20 else f"a number of {len(str(port))} digits"
        msg = f"a port is from 1 to 65535, not {shown}"
        raise typer.BadParameter(msg)
    return port
