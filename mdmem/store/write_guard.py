"""The secrets guard at the one place every write passes: the writer's flush.

The doors (``remember``, sessions, import, hooks, tools, documents...) guard
what they are given, the memory text by the vault's mode (refuse or redact)
and everything around it (tags, fields, scope, session ids, titles) always by
refusal. This is the backstop behind them, so that a door that forgets one
string cannot put a secret on disk: before any file of a transaction is
written, it scans

* the path of every file the transaction writes (file and folder names; a
  slug may have cut a token apart, so a long random-looking run counts too),
* every line the transaction adds or changes in each file,
* the commit message (subject and trailers),

and refuses the whole transaction, one line naming the kind and where, never
the secret itself, if any holds a secret that was not already there. A
secret a person typed into the file themselves stays theirs (a line mdmem
rewrites around it, to add an id or a field, is not refused for it); what is
derived from their file is scrubbed elsewhere
(:func:`mdmem.store.secret_guard.scrub`).

There is no redact mode here: the doors have redacted the memory text by the
time it reaches the writer, so what is still found is in a name, a field or
a message, where a redacted value would be a broken one. A caller who turns
the guard off for one text (``secrets="off"``) has that text let through
(:func:`allow_unguarded`, called by :func:`mdmem.store.inputs.clean_text`);
everything around it is still checked.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Mapping
from contextvars import ContextVar
from typing import Any

from mdmem.errors import SecretRefusedError
from mdmem.store.editors import Pending
from mdmem.store.secret_guard import Finding, scan, scrub

__all__ = ["allow_unguarded", "looks_random", "redacted", "refuse_new_secrets", "safe_id"]

# Texts a caller stored with the guard off, until the next flush of this context.
_UNGUARDED: ContextVar[tuple[str, ...]] = ContextVar("mdmem_unguarded", default=())


def allow_unguarded(text: str) -> None:
    """Let ``text`` (a memory text the caller stores with ``secrets="off"``) through
    the next flush in this thread or task."""
    _UNGUARDED.set((*_UNGUARDED.get(), text))


def refuse_new_secrets(pending: Mapping[str, Pending], message: str, mode: str) -> None:
    """Raise SecretRefusedError if writing the ``pending`` files of a transaction
    (path -> its state) or its commit ``message`` would store a new secret.

    ``mode`` is the vault's guard setting; ``off`` checks nothing.
    """
    allowed = _UNGUARDED.get()
    _UNGUARDED.set(())
    if mode == "off":
        return
    for rel, state in pending.items():
        before, after = state.original, state.tf.to_bytes()
        if scan(rel) or looks_random(rel):
            _refuse("a file or folder name", None)
        old = before.decode("utf-8", "replace") if before else ""
        new = after.decode("utf-8", "replace")
        added = _added_lines(old, new)
        if not added:
            continue
        found = [
            f
            for f in scan(added)
            if added[f.start : f.end] not in old
            and not _OURS.fullmatch(added[f.start : f.end])
            and not _ACROSS_PARTS.search(added[f.start : f.end])
            and not _a_part_alone_is_clean(added, f.start, f.end)
            and not any(added[f.start : f.end] in text for text in allowed)
        ]
        if found:
            _refuse(f"the file {rel}", found)
    if message and [
        f for f in scan(message) if not any(message[f.start : f.end] in t for t in allowed)
    ]:
        _refuse("the commit message", None)


# A name is made from what a caller chose (a session id, a title, a scope)
# after it was cut to a slug, which may have split a token's prefix from its
# body ("sk&#45;proj…" becomes "sk-45-proj-45-…"): a long run that switches
# between upper case, lower case and digits as random data does is refused
# too. Words in CamelCase or ids (lower case and digits) are not such runs.
# What mdmem itself writes that reads like a key next to a key word (a tool
# output's ``key: tout_…``, a content hash, a block id): never a caller's secret.
_OURS = re.compile(r"tout_[0-9a-f]{20}|m-[0-9a-z]{12,32}|[0-9a-f]{40}|[0-9a-f]{64}")
# A match that runs from a memory's text into its tags or fields ("The password
# is #security", "… is [source:: wiki]") joins parts the store checked one by one:
# each part was guarded on its own before it reached the line.
_ACROSS_PARTS = re.compile(r"\s#[\w/-]|\[[\w-]+::")


def _a_part_alone_is_clean(added: str, start: int, end: int) -> bool:
    """A finding that is a tag (``#security``) or a field's value, judged a secret only
    by the memory text before it ("The password is #security"): alone it is clean."""
    span = added[start:end]
    before = added[max(0, start - 3) : start]
    is_part = (span.startswith("#") and before[-1:].isspace()) or before.endswith(":: ")
    return is_part and not scan(span.lstrip("#"))
_RUN = re.compile(r"[A-Za-z0-9]{24,}")
_LOWER = re.compile(r"[a-z]+")


def looks_random(name: str) -> bool:
    """Whether ``name`` holds a long run that reads as random data (see above)."""
    for match in _RUN.finditer(name):
        run = match.group()
        if run.islower() or run.isupper() or not any(c.isdigit() for c in run):
            continue  # one case, or no digit: words, ids, hex
        # Random data has short lower-case runs; words in CamelCase long ones.
        lower = [len(part) for part in _LOWER.findall(run)]
        if lower and sum(lower) / len(lower) <= 2.5:
            return True
    return False


def _added_lines(old: str, new: str) -> str:
    """The lines of ``new`` that ``old`` lacks (as many times as they are new), in order."""
    if not old:
        return new
    if old[-1] == "\n" and new.startswith(old):
        # An append (every write to a fields file, most to a note): what follows
        # the old text is the whole of what is new, without a pass over the file.
        # (It may repeat a line the file holds: a finding in it is still judged
        # against the old text below.)
        return new[len(old) :]
    have = Counter(old.split("\n"))
    out: list[str] = []
    for line in new.split("\n"):
        if have[line] > 0:
            have[line] -= 1
        else:
            out.append(line)
    return "\n".join(out)


def _refuse(where: str, found: list[Finding] | None) -> None:
    kinds = ", ".join(sorted({f.kind for f in found})) if found else "a secret"
    raise SecretRefusedError(
        f"refused: the write would store what looks like a secret ({kinds}) in {where}; "
        "nothing was written"
    )


def redacted(value: Any) -> Any:
    """``value`` (JSON-like: dicts, lists, strings...) with a secret in any string,
    key or value, redacted: for state files outside the vault (the hook log)
    that keep what a host sent, such as its session id or a tool's error."""
    if isinstance(value, str):
        return scrub(value, "redact") if value else value
    if isinstance(value, dict):
        return {redacted(k): redacted(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [redacted(v) for v in value]
    return value


def safe_id(value: str) -> str:
    """An id a host or a file sent (a session id), or, when it holds a secret or
    reads as random key material, a stable stand-in made from its hash: ids
    become file names, fields and commit messages."""
    if not scan(value) and not looks_random(value):
        return value
    return "redacted-" + hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()[:16]
