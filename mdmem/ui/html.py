"""Server-rendered HTML for the memory viewer: one page shell, escaping helpers.

Memory text, file names, authors and commit messages are untrusted: every
value reaches the page through :func:`esc` (text and attribute values) or
:func:`href` (links, which only ever point at this server's own paths), so a
memory holding ``<script>`` or a ``javascript:`` link shows as text. The pages
carry no script at all, and the Content-Security-Policy the server sends
forbids any.

Every path of a session sits under its ``base`` (``/<session path>``, see
:mod:`mdmem.ui.server`): the helpers put it in front of each local path.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable, Mapping
from urllib.parse import quote, urlencode

__all__ = ["CSS", "esc", "form_post", "href", "local_url", "page", "table"]

CSS = """
body{font:15px/1.45 system-ui,sans-serif;margin:0;color:#1d1d1f;background:#fafafa}
header{background:#24292f;color:#fff;padding:.6em 1.2em;display:flex;gap:1.4em;align-items:center}
header a{color:#fff;text-decoration:none}header b{margin-right:1em}
main{padding:1em 1.4em;max-width:1200px}
table{border-collapse:collapse;width:100%;background:#fff}
td,th{border-bottom:1px solid #ddd;padding:.35em .5em;text-align:left;vertical-align:top}
th{background:#f0f0f0;font-weight:600}
.text{white-space:pre-wrap;word-break:break-word}
.meta{color:#57606a;font-size:.9em}
form.filters{display:flex;flex-wrap:wrap;gap:.5em;margin-bottom:1em}
form.filters input,form.filters select{padding:.3em}
form.inline{display:inline}
pre{background:#fff;border:1px solid #ddd;padding:.8em;overflow:auto;white-space:pre-wrap}
.pager{margin:1em 0;display:flex;gap:1em}
.notice{background:#fff8c5;border:1px solid #d4a72c;padding:.5em .8em;margin-bottom:1em}
.error{background:#ffebe9;border:1px solid #cf222e;padding:.5em .8em;margin-bottom:1em}
button{cursor:pointer}
"""


def esc(value: object) -> str:
    """``value`` as text inside HTML (element content or a quoted attribute)."""
    return html.escape("" if value is None else str(value), quote=True)


_BASE = re.compile(r"(/[A-Za-z0-9_-]+)?")


def local_url(path: str, params: Mapping[str, object] | None = None, *, base: str = "") -> str:
    """A URL of this server's ``path`` under ``base`` (segments quoted), never one with
    a scheme or host."""
    if not path.startswith("/") or path.startswith("//"):
        raise ValueError(f"not a local path: {path!r}")
    if not _BASE.fullmatch(base):
        raise ValueError(f"not a session's base: {base!r}")
    url = base + quote(path, safe="/")
    query = {k: str(v) for k, v in (params or {}).items() if v not in (None, "")}
    if query:
        url += "?" + urlencode(query)
    return url


def href(path: str, params: Mapping[str, object] | None = None, *, base: str = "") -> str:
    """:func:`local_url`, escaped for an attribute."""
    return esc(local_url(path, params, base=base))


def table(headings: Iterable[str], rows: Iterable[Iterable[str]]) -> str:
    """A table of already-escaped cells."""
    head = "".join(f"<th>{esc(h)}</th>" for h in headings)
    body = "".join("<tr>" + "".join(f"<td>{cell}</td>" for cell in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def form_post(
    action: str,
    csrf: str,
    label: str,
    fields: Mapping[str, str] | None = None,
    *,
    base: str = "",
) -> str:
    """A one-button form that POSTs to ``action`` with the page's CSRF token."""
    hidden = "".join(
        f'<input type="hidden" name="{esc(k)}" value="{esc(v)}">' for k, v in (fields or {}).items()
    )
    return (
        f'<form class="inline" method="post" action="{href(action, base=base)}">'
        f'<input type="hidden" name="csrf" value="{esc(csrf)}">{hidden}'
        f'<button type="submit">{esc(label)}</button></form>'
    )


def page(title: str, body: str, *, vault_name: str, notice: str = "", base: str = "") -> str:
    """The page shell around ``body`` (already HTML); ``title`` and ``notice`` are text."""
    shown = f'<div class="notice">{esc(notice)}</div>' if notice else ""
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        f"<title>{esc(title)} · mdmem</title>"
        '<meta name="viewport" content="width=device-width,initial-scale=1">'
        f'<link rel="stylesheet" href="{href("/style.css", base=base)}"></head><body>'
        f"<header><b>mdmem · {esc(vault_name)}</b>"
        f'<a href="{href("/", base=base)}">Memories</a>'
        f'<a href="{href("/hooks", base=base)}">Injected</a>'
        f'<a href="{href("/reviews", base=base)}">Reviews</a></header>'
        f"<main>{shown}<h1>{esc(title)}</h1>{body}</main></body></html>"
    )
