"""The vault's own git config is not trusted to run programs.

A vault folder copied or synced together with its ``.git`` carries
``.git/config`` (and whatever it includes) from wherever it came from. Git
runs programs named there: filter drivers, textconv and external diff
commands, merge drivers, ``remote.<name>.uploadpack``, ``core.sshCommand``,
credential helpers, pagers, editors, GPG... mdmem's git calls must not run
any of them, so :class:`~mdmem.store.gitstore.GitStore` reads the repository's
config (``git config --list --show-scope --includes``, cached by the files'
stat) and builds a :class:`ConfigGuard` from it with :func:`guard_for`:

* fixed settings that hold for every git call whatever the config says
  (:data:`FIXED_CONFIG` and :func:`fixed_env`): ``GIT_ALLOW_PROTOCOL``
  limits transports to file, ssh and https (it beats every ``protocol.*``
  setting, so ``ext::`` and remote helpers never run), ``GIT_PAGER=cat``
  beats ``pager.<command>``, ``GIT_EDITOR=:`` is git's no-op editor, and
  signing and signature checks are off;
* ``--no-ext-diff`` on the commands that would run ``diff.external`` or a
  ``diff.<name>.command`` (:meth:`ConfigGuard.arguments`);
* for each setting the vault's config (scopes ``local`` and ``worktree``,
  includes too) adds, an override back to the user's own value from their
  global config, or to git's default or a harmless stand-in. Overrides go in
  ``GIT_CONFIG_COUNT``/``KEY_n``/``VALUE_n`` rather than ``-c``: a subsection
  name may contain ``=``, which ``-c`` would split in the wrong place. git
  reads them after the repository's config, and before ``-c``, so mdmem's own
  ``-c`` settings (its merge drivers) still win;
* what cannot be overridden - git uses the *first* ``remote.<name>.uploadpack``
  / ``receivepack`` it reads, and the vault's config comes after the user's -
  makes the commands that talk to a remote refuse with a GitError naming the
  setting (:meth:`ConfigGuard.check`).

``mdmem doctor`` lists :attr:`ConfigGuard.settings`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from mdmem.errors import GitError

__all__ = [
    "ALLOWED_PROTOCOLS",
    "FIXED_CONFIG",
    "ConfigEntry",
    "ConfigGuard",
    "ProgramSetting",
    "fixed_env",
    "guard_for",
    "include_targets",
    "parse_config_list",
]

ALLOWED_PROTOCOLS = ("file", "ssh", "https")
UNTRUSTED_SCOPES = frozenset({"local", "worktree"})

# Settings that make git start GPG; mdmem neither signs nor checks signatures.
FIXED_CONFIG = (
    "log.showSignature=false",
    "merge.verifySignatures=false",
    "push.gpgSign=false",
)

# The porcelain commands that run an external diff program unless told not to.
_EXT_DIFF_COMMANDS = frozenset({"diff", "log", "show", "whatchanged"})
# Commands that start an upload-pack / receive-pack (``remote`` only with these verbs).
_REMOTE_COMMANDS = frozenset({"fetch", "push", "pull", "ls-remote", "clone"})
_REMOTE_VERBS = frozenset({"update", "prune", "show", "set-head"})

_NEUTRAL_MERGE = "git merge-file -L ours -L base -L theirs %A %O %B"
_GPG_DEFAULTS = {"": "gpg", "openpgp": "gpg", "x509": "gpgsm", "ssh": "ssh-keygen"}
_BOOLEANS = frozenset({"", "true", "false", "yes", "no", "on", "off", "1", "0"})

# (section, variable) -> what mdmem does about it; "*" as the subsection
# matches any name, "" means no subsection. Used for keys that need no
# override of their own (a fixed setting covers them) or only doctor's word.
_COVERED: dict[tuple[str, str, str], str] = {
    ("diff", "", "external"): "mdmem's diffs run with --no-ext-diff",
    ("diff", "*", "command"): "mdmem's diffs run with --no-ext-diff",
    ("remote", "*", "vcs"): "mdmem allows only the file, ssh and https transports",
    ("core", "", "gitproxy"): "mdmem does not allow the git:// transport",
    ("core", "", "editor"): "mdmem runs git with GIT_EDITOR=:",
    ("sequence", "", "editor"): "mdmem runs git with GIT_SEQUENCE_EDITOR=:",
    ("core", "", "pager"): "mdmem runs git with GIT_PAGER=cat",
    ("pager", "", "*"): "mdmem runs git with GIT_PAGER=cat",
    ("core", "", "hookspath"): "mdmem runs git with core.hooksPath=/dev/null",
    ("core", "", "fsmonitor"): "mdmem runs git with core.fsmonitor=false",
    ("gpg", "ssh", "defaultkeycommand"): "mdmem never signs",
    ("uploadpack", "", "packobjectshook"): "git ignores it in a repository's own config",
}
_SIGNING = {
    ("commit", "", "gpgsign"),
    ("tag", "", "gpgsign"),
    ("push", "", "gpgsign"),
    ("log", "", "showsignature"),
    ("merge", "", "verifysignatures"),
}
# Programs only git commands mdmem never starts would run (difftool,
# interpret-trailers, archive, send-email...): doctor mentions them, since
# plain git in the folder would run them.
_ELSEWHERE: dict[tuple[str, str], str] = {
    ("difftool", "cmd"): "git difftool",
    ("difftool", "path"): "git difftool",
    ("mergetool", "cmd"): "git mergetool",
    ("mergetool", "path"): "git mergetool",
    ("guitool", "cmd"): "git gui",
    ("browser", "cmd"): "git web--browse",
    ("browser", "path"): "git web--browse",
    ("man", "cmd"): "git help",
    ("man", "path"): "git help",
    ("trailer", "command"): "git interpret-trailers",
    ("trailer", "cmd"): "git interpret-trailers",
    ("tar", "command"): "git archive",
    ("imap", "tunnel"): "git imap-send",
    ("sendemail", "smtpserver"): "git send-email",
    ("sendemail", "tocmd"): "git send-email",
    ("sendemail", "cccmd"): "git send-email",
    ("sendemail", "headercmd"): "git send-email",
    ("instaweb", "httpd"): "git instaweb",
}


@dataclass(frozen=True)
class ConfigEntry:
    """One line of ``git config --list --show-scope --show-origin``."""

    scope: str  # system, global, local, worktree, command
    origin: str  # "file:<path>", "command line:", ...
    key: str  # section and variable lower case, the subsection as written
    value: str

    @property
    def parts(self) -> tuple[str, str, str]:
        """(section, subsection, variable); the subsection may contain dots."""
        section, _dot, rest = self.key.partition(".")
        subsection, _dot, variable = rest.rpartition(".")
        return section.lower(), subsection, variable.lower()

    @property
    def where(self) -> str:
        return self.origin[len("file:") :] if self.origin.startswith("file:") else self.origin


@dataclass(frozen=True)
class ProgramSetting:
    """A setting of the vault's own git config that would make git run a program."""

    key: str
    value: str
    origin: str  # the config file that sets it
    handling: str  # what mdmem's git calls do about it
    refused: bool = False  # True: commands that reach a remote refuse to run

    def describe(self) -> str:
        value = self.value if len(self.value) <= 60 else self.value[:59] + "…"
        return (
            f"{self.key} = {value!r} in {self.origin} runs a program; {self.handling} "
            f"(remove it if you did not set it)"
        )


@dataclass(frozen=True)
class ConfigGuard:
    """How mdmem's git calls neutralise what the vault's git config would run."""

    settings: tuple[ProgramSetting, ...] = ()
    overrides: tuple[tuple[str, str], ...] = ()  # (key, value), after the repository's config
    refusals: tuple[ProgramSetting, ...] = ()  # for commands that talk to a remote

    def check(self, args: Sequence[str]) -> None:
        """Raise GitError when ``args`` would run a program the guard cannot override."""
        if not self.refusals or not args:
            return
        command = args[0]
        if command in _REMOTE_COMMANDS or (
            command == "remote" and len(args) > 1 and args[1] in _REMOTE_VERBS
        ):
            setting = self.refusals[0]
            raise GitError(
                f"{setting.key} in {setting.origin} would run a program ({setting.value!r}); "
                f"mdmem does not run programs set in a vault's own git config: remove it "
                f"(git config --unset {setting.key}) - see `mdmem doctor`"
            )

    def arguments(self, args: Sequence[str]) -> list[str]:
        """``args`` with ``--no-ext-diff`` after a command that would run an external diff."""
        if args and args[0] in _EXT_DIFF_COMMANDS:
            return [args[0], "--no-ext-diff", *args[1:]]
        return list(args)

    def env(self, environ: Mapping[str, str]) -> dict[str, str]:
        """The overrides as ``GIT_CONFIG_COUNT`` entries after any already in ``environ``."""
        if not self.overrides:
            return {}
        try:
            start = max(0, int(environ.get("GIT_CONFIG_COUNT", "0") or "0"))
        except ValueError:
            start = 0
        env = {"GIT_CONFIG_COUNT": str(start + len(self.overrides))}
        for n, (key, value) in enumerate(self.overrides, start):
            env[f"GIT_CONFIG_KEY_{n}"] = key
            env[f"GIT_CONFIG_VALUE_{n}"] = value
        return env


def fixed_env(environ: Mapping[str, str]) -> dict[str, str]:
    """Environment every mdmem git call gets, whatever the config says.

    Each of these beats the matching config settings. A user's own
    ``GIT_ALLOW_PROTOCOL`` can narrow the allowed transports, not widen them.
    """
    allowed: Sequence[str] = ALLOWED_PROTOCOLS
    own = environ.get("GIT_ALLOW_PROTOCOL")
    if own is not None:
        allowed = [p for p in own.split(":") if p in ALLOWED_PROTOCOLS] or ["none"]
    return {
        "GIT_ALLOW_PROTOCOL": ":".join(allowed),
        "GIT_PAGER": "cat",
        "GIT_EDITOR": ":",
        "GIT_SEQUENCE_EDITOR": ":",
    }


def parse_config_list(raw: str) -> list[ConfigEntry]:
    """Entries of ``git config --list --show-scope --show-origin -z``."""
    fields = raw.split("\0")
    entries: list[ConfigEntry] = []
    for i in range(0, len(fields) - 2, 3):
        scope, origin, item = fields[i], fields[i + 1], fields[i + 2]
        key, _newline, value = item.partition("\n")
        if key:
            entries.append(ConfigEntry(scope, origin, key, value))
    return entries


def include_targets(entries: Sequence[ConfigEntry], root: Path) -> list[Path]:
    """Files the config includes (existing or not), so a change to them is noticed."""
    found: list[Path] = []
    for entry in entries:
        section, _sub, variable = entry.parts
        if section not in ("include", "includeif") or variable != "path" or not entry.value:
            continue
        target = Path(os.path.expanduser(entry.value))
        if not target.is_absolute():
            origin = Path(entry.where)
            base = origin.parent if origin.is_absolute() else (root / origin).parent
            target = base / target
        found.append(target)
    return found


def guard_for(entries: Sequence[ConfigEntry]) -> ConfigGuard:
    """The guard for a repository whose config lists ``entries`` (in git's reading order)."""
    trusted_last: dict[str, str] = {}
    first_scope: dict[str, str] = {}
    trusted_helpers: list[tuple[str, str]] = []
    for entry in entries:
        first_scope.setdefault(entry.key, entry.scope)
        if entry.scope in UNTRUSTED_SCOPES:
            continue
        trusted_last[entry.key] = entry.value
        section, _sub, variable = entry.parts
        if section == "credential" and variable == "helper":
            trusted_helpers.append((entry.key, entry.value))

    settings: list[ProgramSetting] = []
    overrides: dict[str, str] = {}
    refusals: list[ProgramSetting] = []
    reset_helpers = False
    for entry in entries:
        if entry.scope not in UNTRUSTED_SCOPES or trusted_last.get(entry.key) == entry.value:
            continue  # the user's own setting (or the same value as theirs)
        rule = _rule(entry)
        if rule is None:
            continue
        handling, neutral, refuse = rule
        section, sub, variable = entry.parts
        if section == "credential":
            if (entry.key, entry.value) in trusted_helpers:
                continue
            reset_helpers = True
        elif refuse:
            if first_scope.get(entry.key) not in UNTRUSTED_SCOPES:
                continue  # git uses the first value, and that one is the user's
        elif neutral is not None:
            overrides[entry.key] = trusted_last.get(entry.key, neutral)
            if section == "filter":
                overrides[f"filter.{sub}.required"] = trusted_last.get(
                    f"filter.{sub}.required", "false"
                )
        setting = ProgramSetting(entry.key, entry.value, entry.where, handling, refuse)
        settings.append(setting)
        if refuse:
            refusals.append(setting)
    pairs = list(overrides.items())
    if reset_helpers:
        # An empty helper empties the list read so far; then the user's own again.
        pairs += [("credential.helper", ""), *trusted_helpers]
    return ConfigGuard(tuple(settings), tuple(pairs), tuple(refusals))


def _rule(entry: ConfigEntry) -> tuple[str, str | None, bool] | None:
    """(what mdmem does, override value or None, refuse?) for a setting that runs a program."""
    section, sub, variable = entry.parts
    value = entry.value.strip()
    if not value:
        return None  # an empty command runs nothing (an empty helper resets the list)
    if section == "filter" and sub and variable in ("clean", "smudge", "process"):
        return "mdmem's git calls run without this filter", "", False
    if section == "diff" and sub and variable == "textconv":
        return "mdmem's git calls convert with cat instead", "cat", False
    if section == "merge" and sub and variable == "driver":
        return "mdmem's git calls merge with git merge-file instead", _NEUTRAL_MERGE, False
    if section == "remote" and sub and variable in ("uploadpack", "receivepack"):
        return "mdmem refuses to fetch or push while it is set", None, True
    if section == "core" and not sub and variable == "sshcommand":
        return "mdmem's git calls use ssh (or your global setting)", "ssh", False
    if section == "core" and not sub and variable == "askpass":
        return "mdmem's git calls do not ask for passwords with it", "", False
    if section == "core" and not sub and variable == "alternaterefscommand":
        return "mdmem's git calls skip it", "true", False
    if section == "credential" and variable == "helper":
        return "mdmem's git calls use only your own credential helpers", None, False
    if section == "gpg" and variable == "program" and sub in _GPG_DEFAULTS:
        handling = "mdmem never signs, and runs git's default if asked to check"
        return handling, _GPG_DEFAULTS[sub], False
    if section == "protocol" and variable == "allow":
        if sub in ALLOWED_PROTOCOLS or value.lower() == "never":
            return None
        return "mdmem allows only the file, ssh and https transports", None, False
    if (section, sub, variable) in _SIGNING:
        if value.lower() in ("false", "no", "off", "0", ""):
            return None
        return "mdmem's git calls neither sign nor check signatures", None, False
    switch = section == "pager" or (section, variable) == ("core", "fsmonitor")
    if switch and value.lower() in _BOOLEANS:
        return None  # pager.<cmd> = true, core.fsmonitor = false: no program named
    for (sec, subsection, var), handling in _COVERED.items():
        if sec != section or var not in ("*", variable):
            continue
        if (subsection == "*" and sub) or subsection == sub:
            return handling, None, False
    if section == "alias" and value.startswith("!"):
        return "mdmem never runs git aliases", None, False
    if section == "submodule" and variable == "update" and value.startswith("!"):
        return "mdmem never runs git submodule update", None, False
    command = _ELSEWHERE.get((section, variable))
    if command is not None:
        return f"mdmem never runs {command}, but plain git in this folder would", None, False
    return None
