"""Keep secrets out of memory: refuse (default) or redact before anything is written.

The guard runs before a file, git or an index sees the text, so a refused or
redacted secret never reaches any of them. Derived copies of text that a
person typed into the vault by hand (index documents, vectors, recall
output, prompts) go through :func:`scrub`: the file stays the human's, but
what is derived from it is redacted.

What counts as a secret:

* the vendor rules of ``detect-secrets`` (Yelp's maintained detector: AWS,
  GitHub, GitLab, Slack, Stripe, Twilio, SendGrid, npm, PyPI, Telegram,
  Discord, Azure, Mailchimp, Square, IBM, SoftLayer, Cloudant, private key
  headers), used as data: their compiled patterns give positions, which
  redaction needs and the plugins' own API does not return;
* a few rules of ours for formats it lacks or finds only in part (modern
  OpenAI/Anthropic keys, fine-grained GitHub tokens, HuggingFace, bare npm
  tokens, Google keys, Authorization headers, URL credentials with an empty
  user, unquoted AWS secret keys, the whole PEM block, a PEM body without
  its header);
* the prefixed token formats of gitleaks' maintained rule set that
  detect-secrets lacks (DigitalOcean, Vault, Databricks, Shopify, Sentry,
  Grafana, webhooks...: :mod:`mdmem.store.secret_rules`), and ``curl -u
  user:password``;
* payment card numbers: brand prefix and length, Luhn check digit, a card's
  layout or a card word, expiry or security code nearby; the security code
  next to one goes too (:mod:`mdmem.store.payment_cards`);
* ``name = value`` assignments whose name is a secret's name (the keyword
  list of detect-secrets plus token names, and environment names that end
  in one: ``PGPASSWORD``), and high-entropy strings next to a key-like word
  (detect-secrets' entropy measure);
* credentials in a command line's own syntax (``mysql -p…``, ``sshpass -p``,
  ``docker login -p``, ``redis-cli -a``, ``--password …``, a here-string...:
  :mod:`mdmem.store.command_secrets`).

A value a finding starts right after a quote, and that goes on over a line
break to the closing quote (a token wrapped inside quotes), is found whole.

Not secrets here: account numbers that are given out to be paid (IBAN),
personal identifiers (tax or social security numbers) and the like. They are
personal data, not credentials, and a memory of them is often the point.

The text is scanned after zero-width characters and compatibility forms
(full-width letters...) are normalised away, and vendor keys are also looked
for across whitespace (``AKIA IOSF ODNN …``, a key wrapped over two lines);
what is refused or redacted is the span of the ORIGINAL text.

Speed: most memories hold none of the rules' fixed pieces and no long
unbroken token, and such text returns after a few substring checks (a few
microseconds); detect-secrets itself is imported on the first text that
needs the full scan.
"""

from __future__ import annotations

import importlib
import itertools
import re
import unicodedata
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from functools import cache
from typing import Any

from mdmem.errors import SecretRefusedError, Spelled, add_message_filter
from mdmem.store.command_secrets import COMMAND_RULES, NOT_A_VALUE_WORDS
from mdmem.store.payment_cards import CARD_GATE, find_cards
from mdmem.store.secret_forms import INVISIBLE, forms, may_hide, may_hide_digits
from mdmem.store.secret_rules import PREFIX_RULES

__all__ = ["MODES", "Finding", "guard", "redact_spans", "refuse_in_metadata", "scan", "scrub"]

MODES = ("refuse", "redact", "off")

# Invisible characters (see secret_forms.INVISIBLE) are dropped explicitly:
# NFKC leaves them alone.
_INVISIBLE = INVISIBLE
_INVISIBLE_RE = re.compile(f"[{_INVISIBLE}]")


@dataclass(frozen=True)
class Finding:
    """One secret: its kind (never its text) and its span in the scanned text."""

    kind: str
    start: int
    end: int


# ------------------------------------------------------------ quick check --

# Every rule needs one of its ``needles`` (case-folded, looked for with the
# whitespace taken out, so a key split by spaces still has its prefix), or,
# rules without needles, a word of _LONG characters. Ordinary prose has
# neither and returns after the quick check without running ~60 patterns;
# text that has some runs only the rules whose pieces it holds.
# The prefixes of the vendor rules (those marked ``vendor``): the only rules
# also looked for across split pieces.
_VENDOR_NEEDLES = (
    "akia", "asia", "abia", "acca", "a3t", "ghp_", "gho_", "ghu_", "ghs_", "ghr_",
    "github_pat_", "glpat-", "gldt-", "glft-", "glsoat-", "glrt-", "gr1348941", "glcbt-",
    "glimt-", "glptt-", "glagent-", "gloas-", "xox", "hooks.slack.com", "aiza", "k_live_",
    "k_test_", "sk-", "t3blbkfj", "hf_", "npm_", "pypi-", "sg.", "sq0csp-", "akc", "eyj",
)  # fmt: skip
# A name of a secret in an assignment holds one of these ("key" only in a pair).
_NAME_NEEDLES = (
    "pass", "pwd", "secret", "token", "credential", "contrase",
    *(
        f"{first}{sep}key"
        for first in ("api", "auth", "access", "private", "priv", "account", "service",
                      "client", "db", "database")
        for sep in ("", "_", "-", ".")
    ),
)  # fmt: skip
_NEEDLES = (
    *_VENDOR_NEEDLES,
    *_NAME_NEEDLES,
    "_authtoken", "begin", "putty", "bearer", "authoriz", "aws", "sharedaccesskey", "://",
    "curl", *(needle for _kind, _pattern, needles in PREFIX_RULES for needle in needles),
    *(needle for _kind, _pattern, needles, _check in COMMAND_RULES for needle in needles),
)  # fmt: skip


def _trie(words: Iterable[str]) -> str:
    """One regex for many literals, as a trie: the re module tries plain
    alternatives one by one at every position, a trie once per position."""
    tree: dict[str, Any] = {}
    for word in words:
        node = tree
        for ch in word:
            node = node.setdefault(ch, {})
        node[""] = {}

    def emit(node: dict[str, Any]) -> str:
        if "" in node:
            return ""  # a shorter needle already decides: the rest need not match
        alts = [re.escape(ch) + emit(child) for ch, child in sorted(node.items())]
        return alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")"

    return emit(tree)


_NEEDLE_RE = re.compile(_trie(_NEEDLES))
_VENDOR_NEEDLE_RE = re.compile(_trie(_VENDOR_NEEDLES))
# Rules without a fixed piece (Twilio, Telegram, Discord, Mailchimp, key
# material, high-entropy strings) all match 20 or more characters without a
# space, which ordinary words are not.
_LONG = 20


class _Gate:
    """Which rules can match a text: those whose needles it holds, the
    needle-less ones if it has a long word, and the card rule if it has a
    run of 13 digits."""

    def __init__(self, text: str) -> None:
        folded = text.lower() if text.isascii() else text.casefold()
        words = folded.split()
        self.long = bool(words) and max(map(len, words)) >= _LONG
        self.compact = "".join(words)
        self.digits = CARD_GATE.search(text) is not None
        self._admits: dict[tuple[str, ...], bool] = {}  # rules share needle tuples

    def any(self) -> bool:
        return self.long or self.digits or _NEEDLE_RE.search(self.compact) is not None

    def admits(self, needles: tuple[str, ...]) -> bool:
        if not needles:
            return self.long
        known = self._admits.get(needles)
        if known is None:
            known = self._admits[needles] = any(n in self.compact for n in needles)
        return known


# -------------------------------------------------------------- normalise --


@dataclass(frozen=True)
class _View:
    """The text as scanned, and where each of its characters came from."""

    text: str
    origin: list[int] | None = None  # origin[i]: index in the original; None: the same

    def span(self, start: int, end: int) -> tuple[int, int]:
        if self.origin is None:
            return start, end
        return self.origin[start], self.origin[end - 1] + 1


def _normalise(text: str) -> _View:
    """Drop invisible characters and fold compatibility forms (NFKC, per
    character so that every scanned character maps back to the original)."""
    if text.isascii() or (
        unicodedata.is_normalized("NFKC", text) and not _INVISIBLE_RE.search(text)
    ):
        return _View(text)
    out: list[str] = []
    origin: list[int] = []
    for i, ch in enumerate(text):
        if ch in _INVISIBLE:
            continue
        norm = ch if ch.isascii() else unicodedata.normalize("NFKC", ch)
        out.append(norm)
        origin.extend([i] * len(norm))
    return _View("".join(out), origin)


# ------------------------------------------------------------------ rules --


@dataclass(frozen=True)
class _Rule:
    kind: str
    pattern: re.Pattern[str]
    group: str | None = None  # the secret's group; None: the whole match
    vendor: bool = False  # a fixed prefix: also looked for across split pieces
    valid: Callable[[re.Match[str], str], bool] | None = None
    needles: tuple[str, ...] = ()  # one must be in the text (see _Gate); none: a long word


# detect-secrets plugins used as data: (module, class, kind of each pattern in
# its denylist, or None to leave that pattern out; vendor-prefixed?; needles).
# Left out: KeywordDetector and the entropy plugins (they yield values without
# positions; their word list and entropy measure are reused below),
# IPPublicDetector (an address is not a credential), BasicAuthDetector (the
# URL rule below also takes an empty user name and redacts only the password),
# and Artifactory's "AP…" password pattern, which matches capitalised words
# such as APACHECONFERENCE and has no prefix to check quickly.
_GH = ("ghp_", "gho_", "ghu_", "ghs_", "ghr_")
_GL = (
    "glpat-", "gldt-", "glft-", "glsoat-", "glrt-", "gr1348941", "glcbt-", "glimt-", "glptt-",
    "glagent-", "gloas-",
)  # fmt: skip
_DETECT_SECRETS: tuple[tuple[str, str, tuple[str | None, ...], bool, tuple[str, ...]], ...] = (
    ("aws", "AWSKeyDetector", ("AWS access key", "AWS secret key"), True,
     ("akia", "asia", "abia", "acca", "a3t", "aws")),
    ("artifactory", "ArtifactoryDetector", ("Artifactory token", None), True, ("akc",)),
    ("azure_storage_key", "AzureStorageKeyDetector", ("Azure storage key",), False,
     ("accountkey",)),
    ("cloudant", "CloudantDetector", ("Cloudant credentials",) * 4, False, ()),
    ("discord", "DiscordBotTokenDetector", ("Discord bot token",), False, ()),
    ("github_token", "GitHubTokenDetector", ("GitHub token",), True, _GH),
    ("gitlab_token", "GitLabTokenDetector", ("GitLab token",) * 8, True, _GL),
    ("ibm_cloud_iam", "IbmCloudIamDetector", ("IBM Cloud key",), False, ()),
    ("ibm_cos_hmac", "IbmCosHmacDetector", ("IBM COS key",), False, ()),
    ("mailchimp", "MailchimpDetector", ("Mailchimp key",), False, ()),
    ("npm", "NpmDetector", ("npm token",), False, ("_authtoken",)),
    ("openai", "OpenAIDetector", ("OpenAI API key",), True, ("t3blbkfj",)),
    ("private_key", "PrivateKeyDetector", ("private key",) * 8, False, ("begin", "putty")),
    ("pypi_token", "PypiTokenDetector", ("PyPI token",) * 2, True, ("pypi-",)),
    ("sendgrid", "SendGridDetector", ("SendGrid key",), True, ("sg.",)),
    ("slack", "SlackDetector", ("Slack token", "Slack webhook"), True,
     ("xox", "hooks.slack.com")),
    ("softlayer", "SoftlayerDetector", ("SoftLayer key",) * 2, False, ()),
    ("square_oauth", "SquareOAuthDetector", ("Square OAuth secret",), True, ("sq0csp-",)),
    ("stripe", "StripeDetector", ("Stripe key",) * 2, True, ("k_live_",)),
    ("telegram_token", "TelegramBotTokenDetector", ("Telegram bot token",), False, ()),
    ("twilio", "TwilioKeyDetector", ("Twilio key", "Twilio key"), False, ()),
)  # fmt: skip


class _DS:
    """The parts of detect-secrets used beyond its patterns, loaded with them."""

    jwt_valid: Callable[[str], bool]
    b64_entropy: Callable[[str], float]
    hex_entropy: Callable[[str], float]
    sequential: Callable[[str], bool]
    uuid: Callable[[str], bool]
    templated: Callable[[str], bool]
    keywords: frozenset[str]  # detect-secrets' names of secrets, as joined words


_ds = _DS()

# Names whose value is the secret. Matched per word of the name (split at
# _ - . spaces and camelCase), so "tokenizer", "passport", "author",
# "max_tokens" and "secretary" are not names of secrets.
_SECRET_WORDS = frozenset(
    {
        "password", "passwd", "pwd", "passphrase", "pass", "secret", "token", "credential",
        "credentials", "contrasena", "contraseña", "apikey", "authkey", "accesskey",
        "secretkey", "privatekey", "privkey", "accountkey", "servicekey", "clientkey",
        "dbkey", "databasekey", "dbpass", "databasepass", "keypass", "authtoken",
        "accesstoken", "apitoken", "bottoken", "refreshtoken", "sastoken", "idtoken",
    }
)  # fmt: skip
# A name ending in one of these holds something about the secret, not the
# secret: api_key_env = "OPENAI_API_KEY", password_file = ..., token_limit = 100.
_NOT_THE_SECRET = frozenset(
    {
        "env", "var", "variable", "name", "file", "path", "url", "uri", "id", "ids", "type",
        "length", "len", "count", "limit", "size", "header", "field", "prefix", "ttl",
        "timeout", "expiry", "expires", "expiration", "policy", "rotation", "hash", "hashed",
        "encoding", "format", "version", "min", "max", "endpoint", "location", "store",
        "manager", "mode", "provider", "scope", "scopes", "usage", "budget", "reset",
        "required", "strength", "hint", "label", "input", "prompt", "cmd", "command",
        "stdin", "stdout", "through",
    }
)  # fmt: skip
# Values that name, template or stand in for a secret rather than being one.
_PLACEHOLDERS = frozenset(
    {
        "none", "null", "nil", "true", "false", "undefined", "empty", "required", "optional",
        "redacted", "hidden", "masked", "secret", "password", "changeme", "placeholder",
        "pass", "passwd", "pwd", "pw", "mypassword", "yourpassword",
        "example", "string", "str", "bytes", "unset", "default", "todo", "tbd", "n/a",
        # words that start an expression in code: token = await getToken()
        "await", "new", "function", "lambda", "async", "yield", "require", "import", "self",
        "this", "input", "prompt", "getpass", "process", "config", "settings", "options",
    }
)  # fmt: skip
_SECRET_ENDINGS = ("password", "passwd", "passphrase", "secret", "token", "apikey", "pwd")
# The shell's working directories, not passwords.
_SHELL_DIRS = frozenset({"PWD", "OLDPWD"})
_REFERENCE_WORDS = frozenset({"password", "passwd", "pwd", "pass", "secret", "token", "key"})
_WORDS_OF = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
_DOTTED = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+")
_SYMBOL = re.compile(r"[!@#$%^&*+=?~|\\/]")
_HEX = re.compile(r"[0-9a-fA-F]+")
_HASH_CONTEXT = re.compile(r"(?i)commit|sha|hash|digest|checksum|\brev|fingerprint")


def _words(name: str) -> list[str]:
    return [w.lower() for part in re.split(r"[_\-. ]+", name) for w in _WORDS_OF.findall(part)]


def _names_a_secret(name: str, before: str = "") -> bool:
    """Does ``name`` (and ``before``, the word in front of it: "API key") name a secret?"""
    words = _words(name)
    if not words or words[-1] in _NOT_THE_SECRET or words[0] in ("max", "min", "num", "n"):
        return False
    known = _SECRET_WORDS | _ds.keywords
    if any(w in known for w in words) or any(a + b in known for a, b in itertools.pairwise(words)):
        return True
    # An environment name written as one word: PGPASSWORD, MYSQLPWD... (PWD and
    # OLDPWD, the shell's working directories, are excluded by the caller).
    if any(w.endswith(_SECRET_ENDINGS) for w in words):
        return True
    # Only as the first half of a known pair: "pass secrets='redact'" names none.
    prior = _words(before)
    return bool(prior) and prior[-1] + words[0] in known


def _classes(value: str) -> int:
    return sum(
        (
            any(c.isupper() for c in value),
            any(c.islower() for c in value),
            any(c.isdigit() for c in value),
        )
    )


_WORD_BEFORE = re.compile(r"([\w.-]+) $")


def _assignment_valid(match: re.Match[str], text: str) -> bool:
    """``name = value``: is the value a secret, not prose, code or a placeholder?"""
    # The pattern starts at the secret's word, which is quicker to find than
    # the name's start: the whole name (and one word before it, for "API key")
    # is read here.
    start = match.start()
    while start > 0 and (text[start - 1].isalnum() or text[start - 1] in "_.-"):
        start -= 1
    name = text[start : match.end("key")]
    before = _WORD_BEFORE.search(text, max(0, start - 40), start)
    if name in _SHELL_DIRS or not _names_a_secret(
        name, before.group(1) if before is not None else ""
    ):
        return False
    op = match.group("op").strip().lower()
    value = match.group("value")
    after = text[match.end("value") : match.end("value") + 1]
    if op == "==" or after in ("(", "[", "."):  # a comparison, a call, a subscript
        return False
    if (
        value.lower() in _PLACEHOLDERS
        or len(set(value)) == 1  # xxxxxx, ******
        or _ds.templated(value)
        or value[0] in "$%<{"
        or _DOTTED.fullmatch(value)  # config.api_key, os.environ
    ):
        return False
    if re.fullmatch(r"[A-Za-z_][\w-]*", value) and _REFERENCE_WORDS & set(_words(value)):
        return False  # password=password, key=OPENAI_API_KEY, --secret=db-password: names
    if op in ("=", ":=", "=>"):
        return len(value) >= 4
    # ``:``, ``::`` and "is" also occur in prose ("Password: required"): the
    # value must look made up, or be too long for an ordinary word.
    if len(value) < 6:
        return False
    if any(c.isdigit() for c in value) or _SYMBOL.search(value):
        return True
    return len(value) >= (12 if op in (":", "::") else 16)


def _random_enough(value: str) -> bool:
    """A token next to a key word: a secret if it reads like random data."""
    if _ds.uuid(value) or _ds.sequential(value):
        return False
    if _HEX.fullmatch(value):
        return len(value) >= 32 and _ds.hex_entropy(value) >= 3.0
    parts = re.split(r"[_\-]", value)
    if len(parts) > 1 and all(p.isalpha() or p.isdigit() or not p for p in parts):
        return False  # release-2024-candidate, token_budget_v2: a slug
    if not any(c.isdigit() for c in value) or _classes(value) < 2:
        return False
    if value.count("/") >= 2 and _ds.b64_entropy(value) < 4.5:
        return False  # a path
    return _ds.b64_entropy(value) >= 3.5


def _near_key_valid(match: re.Match[str], text: str) -> bool:
    value = match.group("value")
    if _HEX.fullmatch(value):
        before = text[max(0, match.start() - 30) : match.start("value")]
        if _HASH_CONTEXT.search(before):
            return False  # "the key fix is commit 3f2a…": a commit, not a key
        if len(value) in (40, 64) and match.group("word").lower() in ("key", "auth"):
            return False  # the length of a git sha or a sha256, after a word as vague as "key"
    return _random_enough(value)


def _material_valid(match: re.Match[str], text: str) -> bool:
    body = "".join(match.group(0).split())
    return _classes(body) == 3 and _ds.b64_entropy(body) >= 4.5


def _jwt_valid(match: re.Match[str], text: str) -> bool:
    return _ds.jwt_valid(match.group(0))


def _curl_valid(match: re.Match[str], text: str) -> bool:
    # `curl -u user:pass`, quoted in markdown prose: the marks after it are no part of it.
    value = match.group("value").lstrip("`").rstrip("`,.;:)]")
    return not (
        value.lower() in _PLACEHOLDERS
        or len(set(value)) == 1
        or value[0] in "$%<{["
        or _ds.templated(value)
    )


def _bearer_valid(match: re.Match[str], text: str) -> bool:
    value = match.group("value")
    return any(c.isdigit() for c in value) and _classes(value) >= 2


# A long option's first word that makes it a switch, not a secret's name:
# --ask-pass, --no-password, --prompt-token.
_SWITCH_WORDS = frozenset(
    {
        "ask", "no", "skip", "use", "with", "without", "require", "allow", "disable", "enable",
        "show", "read", "save", "store", "reset", "change", "generate", "rotate", "create",
        "check", "verify", "validate", "print", "remember", "forget", "keep", "clear", "prompt",
        "become", "vault", "ignore", "hide", "mask", "redact", "strip", "get", "list",
    }
)  # fmt: skip
_FILE_NAME = re.compile(r"[\w.-]*\.[A-Za-z][A-Za-z0-9]{0,4}|[~.]?/\S*")


def _unquoted(value: str) -> str:
    if len(value) >= 2 and value[0] in "\"'" and value[-1] == value[0]:
        return value[1:-1]
    return value


def _command_check(check: str) -> Callable[[re.Match[str], str], bool]:
    """How a command-line rule's value is judged (see :mod:`mdmem.store.command_secrets`)."""

    def valid(match: re.Match[str], text: str) -> bool:
        key = match.groupdict().get("key")
        if key is not None:
            words = _words(key)
            if not words or words[0] in _SWITCH_WORDS or not _names_a_secret(key):
                return False
        value = _unquoted(match.group("value")).strip()
        if (
            len(value) < 3
            or value[0] in "$%<{[-@`"
            or value.lower() in _PLACEHOLDERS
            or len(set(value)) == 1
            or _ds.templated(value)
        ):
            return False
        if check == "random":
            return not any(c.isspace() for c in value) and _random_enough(value)
        if check == "word":
            return value.lower() not in NOT_A_VALUE_WORDS and not _FILE_NAME.fullmatch(value)
        return True

    return valid


_KEY_WORD = r"(?:api[_ -]?key|key|token|secret|password|passwd|pwd|credentials?|bearer|auth)"

# The needles of our rules, by kind (see _Gate); none: the rule needs a long word.
_OWN_NEEDLES: dict[str, tuple[str, ...]] = {
    "private key": ("begin",),
    "OpenAI API key": ("sk-",),
    "GitHub token": (*_GH, "github_pat_"),
    "Slack token": ("xox",),
    "Google API key": ("aiza",),
    "Stripe key": ("k_live_", "k_test_"),
    "HuggingFace token": ("hf_",),
    "npm token": ("npm_",),
    "JWT": ("eyj",),
    "Azure storage key": ("accountkey", "sharedaccesskey"),
    "URL credentials": ("://",),
    "Authorization header": ("authoriz",),
    "bearer token": ("bearer",),
    "AWS secret key": ("aws",),
    "password assignment": _NAME_NEEDLES,
    "curl credentials": ("curl",),
}


def _own_rules() -> list[_Rule]:
    return [
        # The whole block, BEGIN to END: a header alone leaves the key behind
        # when redacting (see _extend_key_block for a block without its END).
        _Rule(
            "private key",
            re.compile(
                r"-----BEGIN[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----"
                r"(?:.*?-----END[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----)?",
                re.DOTALL,
            ),
        ),
        # Current OpenAI (sk-proj-, sk-svcacct-) and Anthropic (sk-ant-) keys;
        # detect-secrets knows only the legacy T3BlbkFJ form.
        _Rule(
            "OpenAI API key",
            re.compile(r"(?<![\w-])sk-(?:proj-|ant-|live-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}"),
            vendor=True,
        ),
        _Rule(
            "GitHub token",
            re.compile(r"(?<!\w)(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{40,})"),
            vendor=True,
        ),
        _Rule("Slack token", re.compile(r"(?<!\w)xox[abposre]-[A-Za-z0-9-]{10,}"), vendor=True),
        _Rule("Google API key", re.compile(r"(?<!\w)AIza[0-9A-Za-z_-]{35}"), vendor=True),
        _Rule(
            "Stripe key", re.compile(r"(?<!\w)[rsp]k_(?:live|test)_[A-Za-z0-9]{16,}"), vendor=True
        ),
        _Rule("HuggingFace token", re.compile(r"(?<![\w-])hf_[A-Za-z0-9]{30,}"), vendor=True),
        _Rule("npm token", re.compile(r"(?<![\w-])npm_[A-Za-z0-9]{36}"), vendor=True),
        _Rule(
            "JWT",
            re.compile(r"(?<![\w-])eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"),
            vendor=True,
            valid=_jwt_valid,
        ),
        # detect-secrets wants exactly 88 characters; SAS keys and shorter
        # Azure keys pass as AccountKey= / SharedAccessKey= too.
        _Rule(
            "Azure storage key",
            re.compile(
                r"(?i)\b(?:AccountKey|SharedAccessKey)\s*=\s*(?P<value>[A-Za-z0-9+/]{20,}={0,2})"
            ),
            group="value",
        ),
        # An empty user name too: redis://:pw@host.
        _Rule(
            "URL credentials",
            re.compile(r"\b[a-z][a-z0-9+.-]*://[^\s/:@]*:(?P<value>[^\s/@]{3,})@"),
            group="value",
            valid=_curl_valid,  # https://user:pass@host, :${PASSWORD}@ name no password
        ),
        _Rule(
            "Authorization header",
            re.compile(
                r"(?i)\b(?:proxy-)?authorization\b[\"']?\s*[:=]\s*[\"']?"
                r"(?:(?:bearer|basic|token|digest|apikey|sso-key|bot|key)\s+)?"
                r"(?P<value>[A-Za-z0-9\-._~+/=:]{12,})"
            ),
            group="value",
            valid=_bearer_valid,
        ),
        _Rule(
            "bearer token",
            re.compile(r"(?i)\bbearer\s+(?P<value>[A-Za-z0-9\-._~+/]{16,}=*)"),
            group="value",
            valid=_bearer_valid,
        ),
        # detect-secrets finds AWS secret keys only in quotes.
        _Rule(
            "AWS secret key",
            re.compile(
                r"(?i)\baws[\w.-]{0,24}?(?:secret|session)[\w.-]{0,24}?[\"']?\s*"
                r"(?:=|:=|::?|=>)\s*[\"']?(?P<value>[A-Za-z0-9/+=]{40,})"
            ),
            group="value",
        ),
        # curl -u user:password (gitleaks' curl-auth-user): the password only.
        _Rule(
            "curl credentials",
            re.compile(
                r"\bcurl\b[^\n]{0,300}?\s(?:-u|--user)(?:=|[ \t]*)([\"']?)[^\s:\"']+:"
                r"(?P<value>[^\s\"']{3,})\1(?![^\s\"'])"
            ),
            group="value",
            valid=_curl_valid,
        ),
        # name = value, name: value, name:: value (Dataview), "name is value".
        _Rule(
            "password assignment",
            re.compile(
                r"(?i)(?P<key>(?:key|pass|pwd|secret|token|credential|contrase)[\w.-]*)"
                r"[\"'\]]?[ \t]*(?P<op>:=|=>|::|==?|:(?!//)|[ \t](?:is|was|are)[ \t])[ \t]*"
                r"[\"'`]?(?P<value>[^\s\"'`,;<>(){}\[\]]*[^\s\"'`,;<>(){}\[\].:!?])"
            ),
            group="value",
            valid=_assignment_valid,
        ),
        # Random-looking data just after a key word: "the api key for staging a8f5…".
        _Rule(
            "secret next to a key word",
            re.compile(
                rf"(?i)(?<![\w-])(?P<word>{_KEY_WORD})s?\b[^\n]{{0,30}}?"
                r"(?<![A-Za-z0-9+/_=-])(?P<value>[A-Za-z0-9+/_=-]{20,})"
            ),
            group="value",
            valid=_near_key_valid,
        ),
        # A private key's body without its header: lines of base64, or one long run.
        _Rule(
            "key material",
            re.compile(
                r"(?m)^[ \t>*-]*[A-Za-z0-9+/]{40,}={0,2}[ \t]*$"
                r"(?:\n[ \t>*-]*[A-Za-z0-9+/]{40,}={0,2}[ \t]*$)+"
                r"(?:\n[ \t>*-]*[A-Za-z0-9+/]{4,}={0,2}(?=[ \t]*$))?"
                r"|(?<![A-Za-z0-9+/=_-])[A-Za-z0-9+/]{64,}={0,2}(?![A-Za-z0-9+/=_-])"
            ),
            valid=_material_valid,
        ),
    ]


@cache
def _rules() -> tuple[_Rule, ...]:
    """detect-secrets' patterns and ours; imported on first use (it pulls in
    requests and takes ~0.1 s, which text that passes the quick check never pays)."""
    # detect-secrets' logger turns on logging.captureWarnings(True) when it is
    # imported: a user's own warnings (our DeprecationWarnings among them) would
    # go to logging instead of where their program asked.
    showwarning = warnings.showwarning
    try:
        return _load_rules()
    finally:
        warnings.showwarning = showwarning


def _load_rules() -> tuple[_Rule, ...]:
    rules: list[_Rule] = []
    for module_name, class_name, kinds, vendor, needles in _DETECT_SECRETS:
        module = importlib.import_module(f"detect_secrets.plugins.{module_name}")
        denylist: Iterable[re.Pattern[str]] = getattr(module, class_name).denylist
        for kind, pattern in zip(kinds, denylist, strict=False):
            if kind is not None:
                rules.append(_Rule(kind, pattern, vendor=vendor, needles=needles))
    heuristic: Any = importlib.import_module("detect_secrets.filters.heuristic")
    entropy: Any = importlib.import_module("detect_secrets.plugins.high_entropy_strings")
    jwt: Any = importlib.import_module("detect_secrets.plugins.jwt")
    keyword: Any = importlib.import_module("detect_secrets.plugins.keyword")
    _ds.jwt_valid = jwt.JwtTokenDetector.is_formally_valid
    _ds.b64_entropy = entropy.Base64HighEntropyString().calculate_shannon_entropy
    _ds.hex_entropy = entropy.HexHighEntropyString().calculate_shannon_entropy
    _ds.sequential = heuristic.is_sequential_string
    _ds.uuid = heuristic.is_potential_uuid
    _ds.templated = heuristic.is_templated_secret
    _ds.keywords = frozenset(k.replace("_?", "") for k in keyword.DENYLIST)
    # Before our broader rules: a tie between two names of one span goes to the first.
    rules.extend(
        _Rule(kind, re.compile(pattern), needles=needles) for kind, pattern, needles in PREFIX_RULES
    )
    rules.extend(replace(r, needles=_OWN_NEEDLES.get(r.kind, ())) for r in _own_rules())
    rules.extend(
        _Rule(kind, re.compile(pattern), "value", valid=_command_check(check), needles=needles)
        for kind, pattern, needles, check in COMMAND_RULES
    )
    return tuple(rules)


# ------------------------------------------------------------------- scan --


def scan(text: str, *, quick: bool = True) -> list[Finding]:
    """The secrets in ``text``, as spans of ``text`` itself, in order: as
    written, and in each form a reader would undo (entities, URL escapes,
    look-alike letters, a prefix's case, dotted or broken digit groups: see
    :mod:`mdmem.store.secret_forms`).

    ``quick=False`` skips the quick check (for tests that compare both).
    """
    found, plain = _scan_written(text, quick)
    # Plain ASCII without a rule's piece or a long word: only a card's digit
    # groups (dotted, broken over lines) can hide in another form.
    if not (may_hide_digits(text) if plain else may_hide(text)):
        return found
    for form in forms(text):
        found.extend(
            Finding(f.kind, *form.span(f.start, f.end)) for f in _scan_written(form.text, quick)[0]
        )
    return _merge(found)


def _scan_written(text: str, quick: bool) -> tuple[list[Finding], bool]:
    """The findings, and whether the text passed the quick check as plain ASCII."""
    if quick and text.isascii():
        # The common case, before any object is built: most text stops here.
        words = text.lower().split()
        if not words:
            return [], True
        if max(map(len, words)) < _LONG and _NEEDLE_RE.search("".join(words)) is None:
            # No rule's piece and no long word: only a card number can be here.
            if CARD_GATE.search(text) is None:
                return [], True
            return _merge([Finding(kind, s, e) for kind, s, e in find_cards(text)]), True
    return _scan_view_of(text, quick), False


def _scan_view_of(text: str, quick: bool) -> list[Finding]:
    view = _View(text) if text.isascii() else _normalise(text)
    gate = _Gate(view.text) if quick else None
    if gate is not None and not gate.any():
        return []
    found = [Finding(kind, *view.span(s, e)) for kind, s, e in _scan_view(view.text, gate)]
    return _merge(found)


def _scan_view(text: str, gate: _Gate | None) -> list[tuple[str, int, int]]:
    out: list[tuple[str, int, int]] = []
    for rule in _rules():
        if gate is not None and not gate.admits(rule.needles):
            continue
        for match in rule.pattern.finditer(text):
            if rule.valid is not None and not rule.valid(match, text):
                continue
            start, end = match.span(rule.group) if rule.group else match.span()
            if end <= start:
                continue
            if rule.kind == "private key":
                start, end = _extend_key_block(text, start, end)
            out.append((rule.kind, start, _through_quotes(text, start, end)))
    if gate is None or gate.digits:
        out.extend(find_cards(text))
    out.extend(_split_keys(text, out))
    return out


# The rest of a quoted value wrapped over lines: key-like pieces, each on a
# line of its own (after a backslash continuation or not), up to the quote.
_QUOTED_REST = re.compile(r"(?:\\?\r?\n[ \t]*[A-Za-z0-9+/=_.~-]+)+")


def _through_quotes(text: str, start: int, end: int) -> int:
    """The end of a finding that starts after a quote and is wrapped over lines
    before the closing quote (``"ghp_…\\n…"``): at the quote; else ``end``."""
    quote = text[start - 1 : start]
    if quote not in ("'", '"') or text[end : end + 1] not in ("\n", "\r", "\\"):
        return end
    rest = _QUOTED_REST.match(text, end)
    if rest is None or text[rest.end() : rest.end() + 1] != quote:
        return end
    return rest.end()


_B64_LINE = re.compile(r"[ \t>*-]*(?:[A-Za-z0-9+/]{4,}={0,2}|[A-Za-z][\w-]*: .*)?[ \t]*")


def _extend_key_block(text: str, start: int, end: int) -> tuple[int, int]:
    """From a private key's header to its END line, or, with no END line,
    over the base64 and ``Header: value`` lines that follow (PuTTY, PEM
    headers); the dashes before BEGIN go too."""
    line_start = text.rfind("\n", 0, start) + 1
    dashes = text.rfind("-----", line_start, start)
    if dashes != -1:
        start = dashes
    if re.search(r"-----END[ A-Z0-9]*PRIVATE KEY", text[start:end]):
        return start, end
    closing = re.compile(r"-----END[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----|---- END SSH2")
    found = closing.search(text, end)
    if found:
        return start, found.end()
    pos = text.find("\n", end)
    last = end if pos == -1 else pos
    while pos != -1:
        nxt = text.find("\n", pos + 1)
        line = text[pos + 1 : nxt if nxt != -1 else len(text)]
        if not _B64_LINE.fullmatch(line):
            break
        if line.strip():
            last = pos + 1 + len(line.rstrip())
        pos = nxt
    return start, max(end, last)


# The key-like part of a word: a "#" (a tag), a quote or a bracket around a
# piece is no part of it, so ``#ghp_ABCD EFGH …`` and ``"ghp_…`` split over
# two lines inside quotes are searched like bare pieces.
_KEY_PIECE = re.compile(r"[A-Za-z0-9+/=_.-]+")


def _split_keys(text: str, plain: list[tuple[str, int, int]]) -> list[tuple[str, int, int]]:
    """Vendor keys split by whitespace: ``AKIA IOSF ODNN 7EXA MPLE``, or a
    key wrapped over two lines.

    Runs of key-like pieces are joined and searched again. A match counts
    if it spans pieces of one width (the groups a key is shown in; the last
    one may be shorter), ends where a piece ends, and reads like random data;
    ordinary words joined together rarely pass all three.
    """
    if not _VENDOR_NEEDLE_RE.search("".join(text.lower().split())):
        return []
    pieces = list(_KEY_PIECE.finditer(text))
    out: list[tuple[str, int, int]] = []
    run: list[re.Match[str]] = []
    for piece in [*pieces, None]:
        if piece is not None and run and text[run[-1].end() : piece.start()].isspace():
            run.append(piece)
            continue
        if len(run) >= 2:
            out.extend(_split_in_run(text, run, plain))
        run = [piece] if piece is not None else []
    return out


def _split_in_run(
    text: str, run: list[re.Match[str]], plain: list[tuple[str, int, int]]
) -> list[tuple[str, int, int]]:
    joined = "".join(p.group() for p in run)
    if not _VENDOR_NEEDLE_RE.search(joined.lower()):
        return []
    ends: list[int] = []  # offset in ``joined`` where each piece ends
    for p in run:
        ends.append((ends[-1] if ends else 0) + len(p.group()))

    def piece_at(offset: int) -> int:
        return next(i for i, e in enumerate(ends) if offset < e)

    def to_text(offset: int) -> int:
        i = piece_at(offset)
        return run[i].start() + offset - (ends[i] - len(run[i].group()))

    out: list[tuple[str, int, int]] = []
    for rule in _rules():
        if not rule.vendor:
            continue
        for match in rule.pattern.finditer(joined):
            first = piece_at(match.start())
            begin = to_text(match.start())
            alone = rule.pattern.match(joined, match.start(), ends[first])
            if alone is not None and alone.end() == ends[first]:
                continue  # whole in its own piece: the words after it are not part of it
            # The widest regular extent: pieces of one width after the first.
            last = first + 1
            if last >= len(run):
                continue
            width = len(run[last].group())
            while last + 1 < len(run) and len(run[last + 1].group()) == width:
                last += 1
            if last + 1 < len(run) and len(run[last + 1].group()) < width:
                last += 1
            for stop in range(last, first, -1):
                m = rule.pattern.match(joined, match.start(), ends[stop])
                if m is None or m.end() not in ends or piece_at(m.end() - 1) == first:
                    continue
                body = m.group()[4:]
                end = to_text(m.end() - 1) + 1
                whole = any(s <= begin and end <= e for _, s, e in plain)
                if not whole and _classes(body) >= 2 and _ds.b64_entropy(body) >= 3.0:
                    out.append((rule.kind, begin, end))
                break
    return out


def _merge(found: list[Finding]) -> list[Finding]:
    """Overlapping findings become one, named after the widest."""
    merged: list[Finding] = []
    for f in sorted(found, key=lambda f: (f.start, -f.end)):
        if merged and f.start < merged[-1].end:
            top = merged[-1]
            widest = top if top.end - top.start >= f.end - f.start else f
            merged[-1] = Finding(widest.kind, top.start, max(top.end, f.end))
        else:
            merged.append(f)
    return merged


# ------------------------------------------------------------------ guard --


def _where(text: str, findings: list[Finding], limit: int = 3) -> str:
    """Kind and position of each finding (line, column): never its text."""
    parts = []
    for f in findings[:limit]:
        line = text.count("\n", 0, f.start) + 1
        column = f.start - (text.rfind("\n", 0, f.start) + 1) + 1
        parts.append(f"{f.kind} at line {line}, column {column}")
    if len(findings) > limit:
        parts.append(f"{len(findings) - limit} more")
    return "; ".join(parts)


def guard(text: str, mode: str = "refuse") -> str:
    """Return ``text`` (redacted if asked) or raise SecretRefusedError.

    ``mode``: ``refuse`` raises, ``redact`` replaces each secret with
    ``[REDACTED:<kind>]``, ``off`` passes everything through. The error names
    the kind and position of what was found, never the secret.
    """
    if mode == "off":
        return text
    findings = scan(text)
    if not findings:
        return text
    if mode == "refuse":
        raise SecretRefusedError.naming(
            f"refused: the text looks like it contains a secret ({_where(text, findings)}); "
            "remove it, or pass ",
            Spelled("secrets='redact'", "--redact"),
            " to store it redacted",
        )
    return redact_spans(text, findings)


def redact_spans(text: str, findings: list[Finding]) -> str:
    """``text`` with each finding replaced by ``[REDACTED:<kind>]``."""
    pieces = []
    last = 0
    for finding in findings:
        pieces.append(text[last : finding.start])
        pieces.append(f"[REDACTED:{finding.kind}]")
        last = finding.end
    pieces.append(text[last:])
    return "".join(pieces)


def scrub(text: str, mode: str) -> str:
    """A derived copy of ``text`` (index, vector, recall output, prompt):
    secrets redacted unless the vault's guard is ``off``.

    For text that never passed the guard, such as a person's edits: the file
    keeps what they typed, what is derived from it does not.
    """
    if mode == "off" or not text:
        return text
    findings = scan(text)
    return redact_spans(text, findings) if findings else text


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


def _redact_message(message: str) -> str:
    return scrub(message, "redact")


# Every MdmemError message from now on: a secret quoted from refused input is
# redacted (see mdmem.errors.add_message_filter).
add_message_filter(_redact_message)
