"""Credentials in the syntax of a command line: data for the secret guard.

A coding agent runs commands, and a host reports each one to the hooks
(``tool_input.command``), so a password given on a command line is on its
way into a session file, a gotcha and git. detect-secrets and gitleaks find
vendor tokens wherever they stand and ``name = value`` assignments (so
``AWS_SECRET_ACCESS_KEY=…``, ``export TOKEN=…``, ``--password=…`` and
``curl -u user:pass`` are found by the guard's other rules); neither knows
the forms below, where the secret is an argument whose meaning only the
command gives it:

* a password flag of a known client: ``mysql -p<pw>`` (attached: ``-p pw``
  asks for it and names a database), ``sshpass -p``, ``<tool> login -p``
  (docker, podman, oc, cf, az...), ``redis-cli -a``, ``sqlcmd -P``,
  ``ldapsearch -w``, ``mongosh -p``, ``smbclient -U user%pw``, httpie's
  ``-a user:pw``, ``htpasswd -b file user pw``, ``rabbitmqctl add_user u pw``,
  ``net user u pw``;
* a long option named for a secret, with its value after a space
  (``--password pw``, ``--token pw``, ``--api-key pw``; ``--password-stdin``
  and ``--token-file`` name no secret);
* a secret piped into a command that reads one from its input
  (``echo pw | docker login --password-stdin``) or given as a here-string
  (``<<< pw``: after a command that takes a secret, or random-looking);
* a URL whose user part is a token (``https://<token>@host``).

Each entry: (kind, pattern, needles, check). The pattern's ``value`` group
is the secret (quotes around it go with it); ``needles`` are pieces the text
must hold for the pattern to run (lower case, looked for with whitespace
taken out: see ``secret_guard._Gate``); ``check`` says how the value is
judged (``secret_guard._command_valid``): ``value`` refuses only what names
or templates a value (``$VAR``, ``<password>``, ``****``, a placeholder),
``word`` also an ordinary word (a long option in prose: "the --password
flag"), ``random`` wants random-looking data.
"""

from __future__ import annotations

__all__ = ["COMMAND_RULES", "NOT_A_VALUE_WORDS"]

# An argument: quoted (what is inside may be wrapped over a few lines) or
# bare (up to what ends a shell word).
_V = r"""(?P<value>"[^"\n][^"]{0,200}"|'[^'\n][^']{0,200}'|[^\s"'`;|&<>()]+)"""
# The rest of one simple command: no pipe, list operator or line break.
_ARGS = r"[^\n|;&]*?"


def _flag(command: str, flag: str) -> str:
    """``command`` (a regex for its name), later on its command line ``flag``, then the value."""
    return rf"(?<![\w.-])(?:{command})(?![\w-]){_ARGS}[ \t]{flag}{_V}"


COMMAND_RULES: tuple[tuple[str, str, tuple[str, ...], str], ...] = (
    # The mysql family takes its password attached: "-p pw" prompts and names a database.
    (
        "password on a command line",
        _flag(r"mysql\w*|mariadb[\w-]*", r"-p(?=[^\s-])"),
        ("mysql", "mariadb"),
        "value",
    ),
    ("password on a command line", _flag("sshpass", r"-p[ \t]*"), ("sshpass",), "value"),
    (
        "password on a command line",
        _flag(r"\w[\w-]*(?:[ \t]+[\w-]+)?[ \t]+login", r"-p[ \t]+"),
        ("login",),
        "value",
    ),
    (
        "password on a command line",
        _flag(r"(?:redis|keydb|valkey)-cli", r"-a[ \t]+"),
        ("redis-cli", "keydb-cli", "valkey-cli"),
        "value",
    ),
    (
        "password on a command line",
        _flag(r"sqlcmd|bcp|osql|isql", r"-P[ \t]*"),
        ("sqlcmd", "bcp", "osql", "isql"),
        "value",
    ),
    ("password on a command line", _flag(r"ldap\w+", r"-w[ \t]+"), ("ldap",), "value"),
    (
        "password on a command line",
        _flag(r"mongo(?:sh|dump|restore|import|export|stat|top)?", r"-p[ \t]+"),
        ("mongo",),
        "value",
    ),
    (
        "password on a command line",
        _flag(
            r"smbclient|rpcclient|smbmap|smbcacls|nxc|crackmapexec|net",
            r"(?:-U|--user(?:name)?)[ \t=]*[\"']?[^\s%\"']+%",
        ),
        ("%",),
        "value",
    ),
    (
        "password on a command line",
        _flag(r"https?|xh|xhs", r"(?:-a|--auth)[ \t=]+[\"']?[^\s:\"']+:"),
        ("http", "xh"),
        "value",
    ),
    (
        "password on a command line",
        rf"(?<![\w.-])htpasswd[ \t]+-\w*b\w*(?:[ \t]+-\w+)*[ \t]+\S+[ \t]+\S+[ \t]+{_V}",
        ("htpasswd",),
        "value",
    ),
    (
        "password on a command line",
        _flag(r"rabbitmqctl", r"(?:add_user|change_password)[ \t]+\S+[ \t]+"),
        ("rabbitmqctl",),
        "value",
    ),
    (
        "password on a command line",
        rf"(?<![\w.-])net[ \t]+user[ \t]+[^\s/]+[ \t]+(?!/){_V}",
        ("netuser",),
        "word",
    ),
    # --password pw, --token pw, --api-key pw (the name is judged like an
    # assignment's: --password-stdin and --token-file name none).
    (
        "password on a command line",
        r"(?<![\w-])--(?P<key>[\w-]*(?:pass|pwd|token|secret|credential|(?:api|auth|access)[-_]?key)"
        rf"[\w-]*)[ \t]+(?!-){_V}",
        (
            "pass",
            "pwd",
            "token",
            "secret",
            "credential",
            "api-key",
            "api_key",
            "apikey",
            "auth-key",
            "auth_key",
            "authkey",
            "access-key",
            "access_key",
            "accesskey",
        ),
        "word",
    ),
    # A secret piped into a command that reads one from its input.
    (
        "password on a command line",
        rf"(?<![\w.-])(?:echo|printf)(?:[ \t]+-\w+)*[ \t]+(?:'%s(?:\\n)?'[ \t]+)?{_V}[ \t]*\|"
        r"(?=[^\n;&]*?(?:--password-stdin|--with-token|--stdin\b|\bchpasswd\b|\bpasswd\b"
        r"|\blogin\b|\bsecret\b|\btoken\b))",
        ("echo", "printf"),
        "value",
    ),
    # A here-string: a secret after a command that takes one, else random-looking data.
    (
        "password on a command line",
        r"(?i)(?:--password-stdin|--with-token|--stdin|chpasswd|passwd|login|token|secret"
        rf"|password|auth)\b{_ARGS}<<<[ \t]*{_V}",
        ("<<<",),
        "value",
    ),
    ("secret in a here-string", rf"<<<[ \t]*{_V}", ("<<<",), "random"),
    # A token as a URL's user: https://<token>@host (a user and a password are
    # the guard's URL credentials rule).
    (
        "URL token",
        r"\b[a-z][a-z0-9+.-]*://(?P<value>[A-Za-z0-9_~.-]{20,})@[\w.-]",
        ("://",),
        "random",
    ),
)

# Words that follow a long option in prose ("the --password flag is
# required"), not a value a command was given.
NOT_A_VALUE_WORDS = frozenset(
    {
        "flag", "flags", "option", "options", "argument", "arguments", "arg", "args",
        "parameter", "parameters", "param", "switch", "setting", "settings", "value",
        "values", "variable", "prompt", "prompts", "instead", "is", "are", "was", "were",
        "must", "should", "can", "cannot", "will", "would", "may", "might", "or", "and",
        "to", "with", "without", "when", "if", "then", "for", "from", "of", "on", "in",
        "the", "a", "an", "it", "that", "this", "which", "so", "but", "not", "only",
        "also", "too", "here", "there", "below", "above", "first", "again", "works",
        "does", "did", "do", "has", "have", "had", "takes", "expects", "accepts",
        "reads", "sets", "set", "given", "passed", "needed", "required", "optional",
        "file", "stdin", "env", "yourself", "manually", "interactively", "twice",
    }
)  # fmt: skip
