"""Keep secrets out of memory: refuse (default) or redact before anything is written.

The guard runs before a file, git or an index sees the text, so a refused or
redacted secret never reaches any of them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from mdmem.errors import SecretRefusedError

__all__ = ["Finding", "guard", "refuse_in_metadata", "scan", "scan_patterns"]

_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("private key", re.compile(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----")),
    ("OpenAI API key", re.compile(r"\bsk-(?:proj-|ant-|live-)?[A-Za-z0-9_-]{20,}")),
    ("AWS access key", re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b")),
    ("GitHub token", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{40,})")),
    ("Slack token", re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}")),
    ("Google API key", re.compile(r"\bAIza[0-9A-Za-z_-]{35}\b")),
    ("Stripe key", re.compile(r"\b[rs]k_(?:live|test)_[A-Za-z0-9]{16,}")),
    ("JWT", re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}")),
    # ``::`` is a Dataview inline field: ``[password:: hunter2]`` assigns too.
    (
        "password assignment",
        re.compile(
            r"(?i)\b(?:password|passwd|pwd|passphrase|secret|api[_-]?key|access[_-]?token"
            r"|auth[_-]?token|client[_-]?secret)\b[\"']?\s*(?:::?|=|\bis\b)\s*[\"']?"
            r"(?P<value>[^\s\"',;]{6,})"
        ),
    ),
    ("URL credentials", re.compile(r"\b[a-z][a-z0-9+.-]*://[^\s/:@]+:(?P<value>[^\s/@]{3,})@")),
)


@dataclass(frozen=True)
class Finding:
    kind: str
    start: int
    end: int


# Every pattern above needs one of these pieces (lower-cased) to match. Most
# memories contain none, and an ASCII text without any is clean: ten regexes
# (a third of the cost of a bulk import's loop) are spared. Case folding
# outside ASCII is not this simple, so any other text takes the full scan.
_NEEDLES = (
    "-----begin",
    "sk-",
    "akia",
    "asia",
    "ghp_",
    "gho_",
    "ghu_",
    "ghs_",
    "ghr_",
    "github_pat_",
    "xox",
    "aiza",
    "k_live_",
    "k_test_",
    "eyj",
    "pass",
    "pwd",
    "secret",
    "apikey",
    "api_key",
    "api-key",
    "token",
    "://",
)


def _may_hold_secret(text: str) -> bool:
    if not text.isascii():
        return True
    folded = text.lower()
    return any(needle in folded for needle in _NEEDLES)


def scan(text: str) -> list[Finding]:
    if not _may_hold_secret(text):
        return []
    return scan_patterns(text)


def scan_patterns(text: str) -> list[Finding]:
    """What every pattern finds in ``text``, without :func:`scan`'s quick
    check for their pieces: the reference that check is tested against."""
    findings = []
    for kind, pattern in _PATTERNS:
        for match in pattern.finditer(text):
            if "value" in pattern.groupindex and match.group("value"):
                findings.append(Finding(kind, match.start("value"), match.end("value")))
            else:
                findings.append(Finding(kind, match.start(), match.end()))
    return findings


def guard(text: str, mode: str = "refuse") -> str:
    """Return ``text`` (redacted if asked) or raise SecretRefusedError.

    ``mode``: ``refuse`` raises, ``redact`` replaces each secret with
    ``[REDACTED:<kind>]``, ``off`` passes everything through.
    """
    if mode == "off":
        return text
    findings = scan(text)
    if not findings:
        return text
    if mode == "refuse":
        kinds = ", ".join(sorted({f.kind for f in findings}))
        raise SecretRefusedError(
            f"refused: the text looks like it contains a secret ({kinds}); "
            "remove it, or pass secrets='redact' to store it redacted"
        )
    pieces = []
    last = 0
    for finding in sorted(findings, key=lambda f: f.start):
        if finding.start < last:
            continue
        pieces.append(text[last : finding.start])
        pieces.append(f"[REDACTED:{finding.kind}]")
        last = finding.end
    pieces.append(text[last:])
    return "".join(pieces)


def refuse_in_metadata(text: str, what: str) -> None:
    """Raise SecretRefusedError if ``text`` (tags, fields, a heading, a path...) holds a secret.

    Unlike :func:`guard` there is no mode: redaction is meant for a memory's
    text, and a redacted tag, field or file name would be a broken one that
    still says a secret was there, so metadata is refused whatever the setting.
    """
    findings = scan(text)
    if findings:
        kinds = ", ".join(sorted({f.kind for f in findings}))
        raise SecretRefusedError(
            f"refused: {what} contain what looks like a secret ({kinds}); "
            "redaction applies to the memory text only, so remove it"
        )
