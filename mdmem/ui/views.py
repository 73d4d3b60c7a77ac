"""The viewer's pages, each a function of a Vault and the request's parameters.

Reads go through the Vault's reading view (``vault.reading()``: ``recall``, ``list``,
``show``, ``get``: shown text, a secret a person typed redacted), ``git.reviews`` /
``review`` and the hook log the hooks write; every page lists at most one page of
rows, so a vault of 100k memories renders as fast as one of a hundred. The actions
are the CLI's own verbs (:data:`ACTIONS`), run by :mod:`mdmem.ui.server` only for a
POST from the page.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from mdmem.errors import InvalidInputError, MdmemError
from mdmem.hookkit.log import HookLog
from mdmem.models import KINDS, STATUSES
from mdmem.ui.html import esc, form_post, href, page, table

if TYPE_CHECKING:
    from mdmem.vault import Vault

__all__ = ["ACTIONS", "PAGE_SIZE", "Action", "View", "browse", "hooks", "memory", "reviews"]

PAGE_SIZE = 50
#: How a search matches: both (hybrid, the default), words only (fast), meaning only.
_MODES = ("hybrid", "keyword", "vector")
_HOOK_PAGE = 20
_SNIPPET = 240


@dataclass(frozen=True)
class View:
    """What a page needs besides the vault: its parameters, the session's CSRF token
    and the session's base path, which every link of the page starts with."""

    params: Mapping[str, str]
    csrf: str
    vault_name: str
    notice: str = ""
    base: str = ""

    def href(self, path: str, params: Mapping[str, object] | None = None) -> str:
        return href(path, params, base=self.base)

    def action(self, label: str, fields: Mapping[str, str]) -> str:
        return form_post("/action", self.csrf, label, fields, base=self.base)

    def page(self, title: str, body: str) -> str:
        return page(title, body, vault_name=self.vault_name, notice=self.notice, base=self.base)

    def get(self, key: str) -> str:
        return self.params.get(key, "").strip()

    def page_number(self) -> int:
        try:
            return max(1, int(self.get("page") or 1))
        except ValueError:
            return 1


def _snippet(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _SNIPPET else text[: _SNIPPET - 1] + "…"


def _pager(view: View, path: str, has_more: bool, cursor: Mapping[str, str] | None = None) -> str:
    """Links to the next page (by ``cursor`` when given, else by number) and the first."""
    number = view.page_number()
    params = {k: v for k, v in view.params.items() if k not in ("page", "done", "before")}
    links = []
    if number > 1:
        back = {**params} if cursor is not None else {**params, "page": number - 1}
        label = "← newest" if cursor is not None else "← newer"
        links.append(f'<a href="{view.href(path, back)}">{label}</a>')
    links.append(f"<span>page {number}</span>")
    if has_more:
        ahead = {**params, **(cursor or {}), "page": number + 1}
        links.append(f'<a href="{view.href(path, ahead)}">older →</a>')
    return f'<div class="pager">{"".join(links)}</div>'


def _cursor(value: str) -> tuple[tuple[datetime, str] | None, int]:
    """(time, id) of the last row shown and how many rows of that instant were shown
    (``<iso time>~<id>~<count>``); (None, 0): the newest page."""
    parts = value.split("~")
    if len(parts) != 3:
        return None, 0
    try:
        moment, ties = datetime.fromisoformat(parts[0]), max(0, int(parts[2]))
    except ValueError:
        return None, 0
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return (moment, parts[1]), ties


def _select(name: str, options: tuple[str, ...], chosen: str) -> str:
    items = [f'<option value="">any {esc(name)}</option>']
    for option in options:
        mark = " selected" if option == chosen else ""
        items.append(f'<option value="{esc(option)}"{mark}>{esc(option)}</option>')
    return f'<select name="{esc(name)}">{"".join(items)}</select>'


def _filters(view: View) -> str:
    def text(name: str, hint: str) -> str:
        return (
            f'<input type="text" name="{name}" value="{esc(view.get(name))}" '
            f'placeholder="{esc(hint)}">'
        )

    return (
        f'<form class="filters" method="get" action="{view.href("/")}">'
        f'<input type="search" name="q" value="{esc(view.get("q"))}" '
        'placeholder="search by meaning or words" size="40" autofocus>'
        f"{_select('mode', _MODES, view.get('mode'))}"
        f"{_select('kind', KINDS, view.get('kind'))}"
        f"{_select('status', STATUSES, view.get('status'))}"
        f"{text('scope', 'scope, e.g. project:x')}{text('file', 'file, e.g. USER.md')}"
        f"{text('author', 'written by')}"
        '<button type="submit">Show</button></form>'
    )


def _memory_link(view: View, memory_id: str, label: str | None = None) -> str:
    return f'<a href="{view.href("/m/" + memory_id)}">{esc(label or memory_id)}</a>'


def browse(vault: Vault, view: View) -> str:
    """Memories newest first, or the best matches of a search, filtered, one page."""
    number = view.page_number()
    want = number * PAGE_SIZE + 1
    offset = (number - 1) * PAGE_SIZE
    kind, scope, status = view.get("kind") or None, view.get("scope"), view.get("status")
    path, author, query = view.get("file"), view.get("author"), view.get("q")
    note = ""
    if query:
        found = vault.reading().recall(
            query,
            k=want,
            kinds=kind,
            scope=scope or None,
            include_inactive=bool(status and status != "active"),
            mode=view.get("mode") if view.get("mode") in _MODES else "hybrid",
        )
        hits = [h for h in found.items if (not path or h.path == path)]
        if status:
            hits = [h for h in hits if h.status == status]
        if author:
            note = "written-by is a filter of the list, not of a search: left out. "
        if found.degraded:
            note += f"Recall is degraded: {found.degraded_reason or 'a part is missing'}."
        rows = [
            (h.id, h.text, h.kind, h.path, h.line_start, h.status, h.created, f"{h.score:.3f}")
            for h in hits
        ]
        heading = ("id", "text", "kind", "file", "status", "created", "score")
    else:
        # Older pages start below a cursor (the last row's time and id), so page 200
        # costs what page 1 does: the list reads one page, never the ones before it.
        cursor, ties = _cursor(view.get("before"))
        listed = vault.reading().list(
            kinds=kind,
            scopes=scope if scope else None,
            statuses=status or None,
            author=author or None,
            paths=[path] if path else None,
            until=cursor[0] if cursor else None,
            limit=PAGE_SIZE + 1 + ties,
        )
        if cursor is not None:
            listed = [m for m in listed if (m.created, m.id) < cursor]
        rows = [
            (m.id, m.text, m.kind, m.path, m.line, m.status, m.created, m.scope or "root")
            for m in listed
        ]
        offset = 0
        heading = ("id", "text", "kind", "file", "status", "created", "scope")
    shown = rows[offset : offset + PAGE_SIZE]
    cells = [
        (
            _memory_link(view, memory_id),
            f'<div class="text">{esc(_snippet(text))}</div>',
            esc(kind_),
            f'<a href="{view.href("/", {"file": file})}">{esc(file)}</a>'
            f'<span class="meta">:{esc(line)}</span>',
            esc(status_),
            f'<span class="meta">{esc(created.isoformat(timespec="minutes"))}</span>',
            esc(last),
        )
        for memory_id, text, kind_, file, line, status_, created, last in shown
    ]
    body = _filters(view)
    if note:
        body += f'<div class="notice">{esc(note)}</div>'
    body += table(heading, cells) if cells else "<p>No memory matches.</p>"
    more = len(rows) > offset + PAGE_SIZE
    if query or not shown:
        body += _pager(view, "/", more)
    else:
        last = shown[-1]
        # Rows of the last row's instant shown so far: the next list skips them.
        same = sum(1 for row in shown if row[6] == last[6])
        if cursor is not None and cursor[0] == last[6]:
            same += ties
        body += _pager(view, "/", more, {"before": f"{last[6].isoformat()}~{last[0]}~{same}"})
    title = f"Search: {query}" if query else "Memories"
    return view.page(title, body)


def memory(vault: Vault, view: View, memory_id: str) -> str:
    """One memory: its text and fields, who wrote each version and when, and actions."""
    shown = vault.reading().show(memory_id)
    row: dict[str, Any] = shown.memory
    fields = [
        ("id", esc(row.get("id"))),
        ("kind", esc(row.get("kind"))),
        ("status", esc(row.get("status"))),
        ("scope", esc(row.get("scope") or "root")),
        ("file", f'{esc(row.get("path"))}<span class="meta">:{esc(row.get("line"))}</span>'),
        ("tags", esc(" ".join("#" + t for t in row.get("tags") or []))),
        ("created", esc(row.get("created"))),
        ("updated", esc(row.get("updated") or "")),
    ]
    shown_keys = {name for name, _ in fields}
    fields += [(str(k), esc(v)) for k, v in row.get("fields") or [] if k not in shown_keys]
    if shown.provenance is not None:
        fields.append(("written by", esc(", ".join(shown.provenance.authors))))
    versions = [
        (
            f'<span class="meta">{esc(v.date)}</span>',
            esc(v.author) + (' <span class="meta">(agent)</span>' if v.is_agent else ""),
            esc(v.subject),
            esc(v.status or ("forgotten" if v.path is None else "")),
            f'<div class="text">{esc(v.text or "")}</div>',
            f'<span class="meta">{esc(v.commit[:10])}</span>',
        )
        for v in reversed(shown.history)
    ]
    actions = ""
    if row.get("status") == "active":
        actions += view.action("Resolve", {"verb": "resolve", "id": memory_id})
    actions += " " + view.action("Forget", {"verb": "forget", "id": memory_id})
    body = (
        f'<div class="text" id="memory-text">{esc(row.get("text"))}</div>'
        + table(("field", "value"), [(esc(k), v) for k, v in fields])
        + f"<p>{actions}</p>"
        + "<h2>History</h2>"
        + (
            table(("when", "who", "commit message", "status", "text", "commit"), versions)
            if versions
            else "<p>Not committed yet.</p>"
        )
        + "".join(f'<div class="error">{esc(p)}</div>' for p in shown.problems)
    )
    return view.page(f"Memory {memory_id}", body)


def hooks(vault: Vault, view: View) -> str:
    """What the coding-agent hooks injected into which prompt, newest first."""
    entries = list(reversed(HookLog(vault.admin.state_dir).entries()))
    number = view.page_number()
    start = (number - 1) * _HOOK_PAGE
    rows = []
    for entry in entries[start : start + _HOOK_PAGE]:
        ids = [str(i) for i in entry.get("ids") or []]
        injected = []
        for memory_id in ids:
            try:
                text = _snippet(vault.reading().get(memory_id).text)
            except MdmemError:
                text = "(no longer in the vault)"
            injected.append(f"<li>{_memory_link(view, memory_id)} {esc(text)}</li>")
        what = f"<ul>{''.join(injected)}</ul>" if injected else '<span class="meta">nothing</span>'
        problem = entry.get("error") or entry.get("skipped") or ""
        rows.append(
            (
                f'<span class="meta">{esc(entry.get("time"))}</span>',
                esc(entry.get("host")),
                esc(entry.get("event")),
                esc(entry.get("session") or ""),
                what + (f'<div class="meta">{esc(problem)}</div>' if problem else ""),
                esc(entry.get("tokens", "")),
                esc(entry.get("took_ms", "")),
            )
        )
    body = (
        table(("when", "host", "event", "session", "injected", "tokens", "ms"), rows)
        if rows
        else "<p>No hook runs logged yet.</p>"
    )
    body += _pager(view, "/hooks", len(entries) > start + _HOOK_PAGE)
    return view.page("What the hooks injected", body)


def reviews(vault: Vault, view: View) -> str:
    """Consolidations waiting on review branches; one in full with its diff."""
    branch = view.get("branch")
    if branch:
        review = vault.git.review(branch)
        counts = (
            f"{review.added} added, {review.superseded} superseded, {review.dropped} dropped, "
            f"{review.episodes} episodes, {review.entries} session entries"
        )
        buttons = view.action("Merge", {"verb": "merge", "branch": review.branch})
        buttons += view.action("Reject", {"verb": "reject", "branch": review.branch})
        body = (
            f'<p>{esc(review.title)} <span class="meta">{esc(review.date)}</span></p>'
            f"<p>{esc(counts)}</p><p>{buttons}</p><pre>{esc(review.diff)}</pre>"
        )
        return view.page(f"Review {branch}", body)
    rows = [
        (
            f'<a href="{view.href("/reviews", {"branch": r.branch})}">{esc(r.branch)}</a>',
            esc(r.title),
            f'<span class="meta">{esc(r.date)}</span>',
            esc(f"{r.added} added, {r.superseded} superseded, {r.dropped} dropped"),
        )
        for r in vault.git.reviews()
    ]
    body = (
        table(("branch", "what", "when", "changes"), rows)
        if rows
        else "<p>No consolidation is waiting for review.</p>"
    )
    return view.page("Pending reviews", body)


@dataclass(frozen=True)
class Action:
    """A button's verb: what it runs (the CLI's verb) and where the page goes next."""

    run: Callable[[Vault, Mapping[str, str]], str]
    back: Callable[[Mapping[str, str]], str]


def _required(form: Mapping[str, str], key: str) -> str:
    value = form.get(key, "").strip()
    if not value:
        raise InvalidInputError(f"the form names no {key}")
    return value


def _resolve(vault: Vault, form: Mapping[str, str]) -> str:
    memory_id = _required(form, "id")
    vault.resolve(memory_id)
    return f"resolved {memory_id}"


def _forget(vault: Vault, form: Mapping[str, str]) -> str:
    memory_id = _required(form, "id")
    vault.forget(memory_id, reason="forgotten in mdmem ui")
    return f"forgot {memory_id} (git history keeps it)"


def _merge(vault: Vault, form: Mapping[str, str]) -> str:
    decision = vault.git.merge_review(_required(form, "branch"))
    return f"merged {decision.branch}"


def _reject(vault: Vault, form: Mapping[str, str]) -> str:
    decision = vault.git.reject_review(_required(form, "branch"))
    return f"rejected {decision.branch}"


#: ``mdmem resolve``, ``mdmem forget``, ``mdmem git review --merge`` / ``--reject``.
ACTIONS: dict[str, Action] = {
    "resolve": Action(_resolve, lambda f: "/m/" + f.get("id", "")),
    "forget": Action(_forget, lambda f: "/"),
    "merge": Action(_merge, lambda f: "/reviews"),
    "reject": Action(_reject, lambda f: "/reviews"),
}
