"""The settings service's ``/docs`` page (:mod:`rrf_retriever.apps.service`): one self-contained HTML page built
from the app's OpenAPI document, with no script and nothing fetched from another host.

FastAPI's own pages (Swagger UI at ``/docs``, ReDoc at ``/redoc``) load their JavaScript and CSS from a CDN, so an
offline deployment cannot render them, and a browser cannot send the bearer key they would need. This page lists
every route (method, path, what it does, its parameters and body) and links the machine-readable
``/openapi.json``. It holds no data and no setting, only what the source says, so the service serves it without
the API key (the Host check still applies); ``/openapi.json`` and every data route keep needing the key. Its
``Content-Security-Policy`` lets a browser load nothing but the page itself.

Example:
    >>> page = docs_page({"info": {"title": "t"}, "paths": {"/health": {"get": {"summary": "Health"}}}}, keyed=False)
    >>> "/health" in page and "https://" not in page
    True
"""

from __future__ import annotations

import html
from collections.abc import Mapping
from typing import Any

__all__ = ["DOCS_HEADERS", "DOCS_PATH", "docs_page"]

#: Where the page is served.
DOCS_PATH = "/docs"
#: Headers of the page: the browser may load nothing else (no script, no remote style, font or image).
DOCS_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; "
                               "frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Cache-Control": "no-store",
}
_STYLE = ("body{font:15px/1.45 system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;color:#222}"
          "code,pre{font-family:ui-monospace,monospace;background:#f4f4f4;padding:0 .2em}"
          "pre{padding:.6em;white-space:pre-wrap}h2{margin-top:2rem;border-bottom:1px solid #ddd}"
          ".m{display:inline-block;min-width:4.5em;font-weight:600}td,th{text-align:left;padding:.1em .6em .1em 0}")


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _type(schema: Mapping[str, Any]) -> str:
    """A short type name of a JSON schema (``integer``, ``array of string``, ``SearchRequest``)."""
    if "$ref" in schema:
        return str(schema["$ref"]).rsplit("/", 1)[-1]
    if "anyOf" in schema:
        return " or ".join(_type(s) for s in schema["anyOf"] if isinstance(s, Mapping))
    if schema.get("type") == "array" and isinstance(schema.get("items"), Mapping):
        return f"array of {_type(schema['items'])}"
    return str(schema.get("type", "any"))


def _fields(schema: Mapping[str, Any], components: Mapping[str, Any]) -> list[str]:
    """A table of a body model's fields (name, type, description), when the body is a named model."""
    model = components.get(str(schema.get("$ref", "")).rsplit("/", 1)[-1], {})
    props = model.get("properties", {}) if isinstance(model, Mapping) else {}
    if not props:
        return []
    out = ["<table><tr><th>field</th><th>type</th><th></th></tr>"]
    for name, prop in props.items():
        if isinstance(prop, Mapping):
            out.append(f"<tr><td><code>{_e(name)}</code></td><td>{_e(_type(prop))}</td>"
                       f"<td>{_e(prop.get('description', ''))}</td></tr>")
    out.append("</table>")
    return out


def _operation(method: str, path: str, op: Mapping[str, Any], components: Mapping[str, Any]) -> list[str]:
    out = [f'<h3><span class="m">{_e(method.upper())}</span> <code>{_e(path)}</code></h3>']
    text = op.get("description") or op.get("summary") or ""
    if text:
        out.append(f"<p>{_e(text)}</p>")
    params = [p for p in op.get("parameters", ()) if isinstance(p, Mapping)]
    if params:
        out.append("<table><tr><th>parameter</th><th>in</th><th>type</th><th></th></tr>")
        for p in params:
            given = p.get("schema")
            schema: Mapping[str, Any] = given if isinstance(given, Mapping) else {}
            required = "required" if p.get("required") else ""
            out.append(f"<tr><td><code>{_e(p.get('name', ''))}</code> {required}</td><td>{_e(p.get('in', ''))}</td>"
                       f"<td>{_e(_type(schema))}</td><td>{_e(p.get('description', ''))}</td></tr>")
        out.append("</table>")
    body = op.get("requestBody", {}).get("content", {}).get("application/json", {}).get("schema")
    if isinstance(body, Mapping):
        out.append(f"<p>JSON body: <code>{_e(_type(body))}</code></p>")
        out.extend(_fields(body, components))
    return out


def docs_page(schema: Mapping[str, Any], *, keyed: bool, openapi_url: str = "/openapi.json") -> str:
    """The ``/docs`` page of an OpenAPI document: every route, and how to reach the machine-readable document.

    Args:
        schema: The app's OpenAPI document (``app.openapi()``).
        keyed: Whether the service needs an API key (the page then says how to send it).
        openapi_url: The path of the OpenAPI document (a path on this host, never a URL elsewhere).

    Returns:
        A complete HTML document without scripts or references to another host.
    """
    info = schema.get("info", {})
    title = info.get("title", "API")
    auth = ("Every route but <code>/health</code> and this page needs the header <code>Authorization: Bearer "
            "&lt;key&gt;</code>, " if keyed else "No API key is set; ")
    parts = [
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{_e(title)}</title><style>{_STYLE}</style></head><body>",
        f"<h1>{_e(title)}</h1>",
        f"<p>{_e(info.get('description', ''))}</p>",
        f"<p>{auth}the OpenAPI document is at <a href=\"{_e(openapi_url)}\"><code>{_e(openapi_url)}</code></a> "
        "(for clients and code generators), e.g.</p>",
        f"<pre>curl{' -H &quot;Authorization: Bearer $KEY&quot;' if keyed else ''} "
        f"&lt;this host&gt;{_e(openapi_url)}</pre>",
        "<h2>Routes</h2>",
    ]
    components = schema.get("components", {}).get("schemas", {})
    for path, operations in schema.get("paths", {}).items():
        if not isinstance(operations, Mapping):
            continue
        for method, op in operations.items():
            if isinstance(op, Mapping):
                parts.extend(_operation(method, path, op, components))
    parts.append("</body></html>")
    return "\n".join(parts)
