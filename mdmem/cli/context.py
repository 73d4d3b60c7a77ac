"""What every mdmem command shares: the vault context, output, errors and the ``mdmem`` group.

Each command parses its options, calls one library method and prints the
result (``--json`` for scripts, with the API's field names). Library errors
and usage errors become one line on stderr and a non-zero exit; never a
traceback or click's usage block, unless ``MDMEM_DEBUG=1`` asks for them.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

import click

from mdmem.aliases import Alias, AliasTable
from mdmem.errors import MdmemError, VaultNotFoundError
from mdmem.models import Memory, one_line, to_jsonable

if TYPE_CHECKING:
    from mdmem.vault import Vault

F = TypeVar("F", bound=Callable[..., Any])

EXIT_ERROR = 1
EXIT_USAGE = 2  # click's (and argparse's) code for a bad command line
EXIT_INTERNAL = 2
LOG_FORMAT = "%(levelname)s: %(message)s"


class OpenedVault:
    """A vault already open, handed to the group as ``obj`` (the warm server runs
    commands against its own instead of opening the vault again); ``cwd``: the
    folder the command was typed in, when that is not this process's."""

    def __init__(self, vault: Vault, cwd: str | None = None) -> None:
        self.vault = vault
        self.cwd = cwd


class Context:
    def __init__(
        self,
        vault_path: str | None,
        agent: str | None,
        quiet: bool,
        opened: Vault | None = None,
        cwd: str | None = None,
    ) -> None:
        self.vault_path = vault_path
        self.agent = agent
        self.quiet = quiet
        self._vault: Vault | None = opened
        self._cwd = cwd

    def here(self, path: str | None = None) -> Path:
        """``path`` (default ".") from the folder the command was typed in: the
        caller's, also when the warm server runs the command for it."""
        base = Path(self._cwd or os.getcwd())
        return base / Path(path or ".").expanduser()

    def root(self) -> Path:
        """The vault folder: --vault, then $MDMEM_VAULT, then the nearest mdmem.toml
        (a subfolder of a vault, given either way, means the vault)."""
        from mdmem.store.vaultdir import find_vault_root, resolve_vault_path

        path = self.vault_path or os.environ.get("MDMEM_VAULT")
        if not path:
            return find_vault_root()
        try:
            return resolve_vault_path(path)
        except VaultNotFoundError:
            return Path(path)  # not a vault (yet): opening it says so; hooks install keeps it

    def person_vault(self, where: Path) -> Vault:
        """The person's own vault for a command run in a code repository (the team
        verbs): --vault, $MDMEM_VAULT, a vault ``where`` is in, else the vault the
        hooks keep this repository's memories in (``hooks.toml``, a confirmed
        project file). Never a suggestion to make the repository a vault."""
        named = self.vault_path or os.environ.get("MDMEM_VAULT")
        if self._vault is not None or named:
            return self.vault()
        from mdmem.hookkit.policy import hook_vault_root, resolve_policy
        from mdmem.store.vaultdir import find_vault_root

        try:
            found = find_vault_root(where)
        except VaultNotFoundError:
            try:
                found, _ = hook_vault_root(resolve_policy(str(where)), None, None, None, str(where))
            except FileNotFoundError:
                raise VaultNotFoundError(
                    f"which vault is yours? {where} is in no vault and your hooks name none: "
                    "pass --vault PATH, set MDMEM_VAULT, or `vault = PATH` in hooks.toml"
                ) from None
        self.vault_path = str(found)
        return self.vault()

    def vault(self) -> Vault:
        if self._vault is None:
            from mdmem.vault import Vault

            # Opening indexes what changed on disk: the whole vault after the
            # state dir is gone, which deserves a bar (stderr, terminals only,
            # not for --json: a script reads the report).
            current = click.get_current_context(silent=True)
            as_json = bool(current is not None and current.params.get("as_json"))
            with progress_bars(enabled=not self.quiet and not as_json) as progress:
                self._vault = Vault.open(self.root(), agent=self.agent, progress=progress)
        return self._vault


def emit(data: Any, as_json: bool, human: Callable[[], None]) -> None:
    if as_json:
        click.echo(json.dumps(to_jsonable(data), ensure_ascii=False, indent=2))
    else:
        human()


def json_option(func: F) -> F:
    return click.option("--json", "as_json", is_flag=True, help="Print JSON (stable shape).")(func)


def scope_option(func: F) -> F:
    return click.option(
        "--scope", default=None, help="Scope such as project:marketing or user:alice."
    )(func)


def read_text(text: str) -> str:
    if text == "-":
        return sys.stdin.read()
    return text


def memory_line(verb: str, memory: Memory) -> None:
    status = "" if memory.was_new else " (already known)"
    click.echo(f"{verb} {memory.id} → {memory.path}:{memory.line}{status}")


# Commands that moved into a noun group in 0.1.0: the old name still runs the
# command (hidden from --help), with one line on stderr, until its removal version.
CLI_ALIASES = AliasTable(
    "command names",
    {
        old: Alias(f"mdmem {old}", f"mdmem {new}")
        for old, new in {
            "import": "library import",
            "export": "library export",
            "list": "library list",
            "show": "library show",
            "ingest": "library ingest",
            "changes": "git changes",
            "provenance": "git provenance",
            "sync": "git sync",
            "purge": "git purge",
            "review": "git review",
            "undo": "git undo",
            "cleanup": "admin cleanup",
            "retention": "admin retention",
            "config": "admin config",
            "trust": "admin trust",
            "providers": "admin providers",
            "feedback": "usefulness feedback",
            "summarize-session": "session summarize",
            "resolve-session": "session resolve",
            "capture-tools": "session capture-tools",
            "flush-reminder": "session flush-reminder",
            "consolidate-stale": "session consolidate-stale",
            "pending": "session pending",
            "action": "session action",
        }.items()
    },
)
# (group, command) each old name runs.
MOVED_COMMANDS: dict[str, tuple[str, str]] = {
    old: (words[1], words[2])
    for old, alias in CLI_ALIASES.items()
    if len(words := alias.new.split()) == 3
}


class _Group(click.Group):
    """Turns library and usage errors into one line and an exit code."""

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        found = super().get_command(ctx, cmd_name)
        if found is None and cmd_name in MOVED_COMMANDS:
            group_name, sub_name = MOVED_COMMANDS[cmd_name]
            group = super().get_command(ctx, group_name)
            if isinstance(group, click.Group):
                if not ctx.resilient_parsing:  # not while the shell completes a line
                    click.echo(f"warning: {CLI_ALIASES[cmd_name].message}", err=True)
                return group.get_command(ctx, sub_name)
        return found

    def main(self, args: Any = None, *rest: Any, **extra: Any) -> Any:
        # An `mdmem` script installed before the entry point moved to
        # mdmem.__main__:run calls the group with no args: offer the command
        # line to the warm server here as well (run() passes args explicitly).
        if args is None:
            from mdmem.warm.client import thin_cli

            code = thin_cli(sys.argv[1:])
            if code is not None:
                sys.exit(code)
        return super().main(args, *rest, **extra)

    def make_context(
        self,
        info_name: str | None,
        args: list[str],
        parent: click.Context | None = None,
        **extra: Any,
    ) -> click.Context:
        # The group's own options (`mdmem --bogus`) are parsed here, before invoke.
        try:
            return super().make_context(info_name, _vault_first(args), parent, **extra)
        except click.exceptions.NoArgsIsHelpError:
            raise
        except click.UsageError as exc:
            _usage_error(exc)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except click.exceptions.NoArgsIsHelpError:
            raise  # plain `mdmem`: the help text is the answer, not an error
        except click.UsageError as exc:
            _usage_error(exc)
        except MdmemError as exc:
            if os.environ.get("MDMEM_DEBUG"):
                raise
            # Flags, not the Python parameters the library's message names.
            click.echo(f"error: {one_line(exc.cli_message or '') or _one_line(exc)}", err=True)
            ctx.exit(EXIT_ERROR)
        except (click.ClickException, click.exceptions.Exit, click.Abort):
            raise
        except KeyboardInterrupt:
            click.echo("interrupted", err=True)
            ctx.exit(130)
        except OSError as exc:
            if os.environ.get("MDMEM_DEBUG"):
                raise
            click.echo(f"error: {_one_line(exc)}", err=True)
            ctx.exit(EXIT_ERROR)
        except Exception as exc:
            if os.environ.get("MDMEM_DEBUG"):
                raise
            click.echo(
                f"error: internal error ({type(exc).__name__}: {_one_line(exc)}); "
                "set MDMEM_DEBUG=1 for a traceback",
                err=True,
            )
            ctx.exit(EXIT_INTERNAL)


_GROUP_VALUE_OPTIONS = ("--vault", "--agent")


def _vault_first(args: list[str]) -> list[str]:
    """``mdmem recall --vault V q`` as ``mdmem --vault V recall q``: --vault may follow the command.

    Only before a ``--`` (after it every word is the command's own).
    """
    command_at = None
    i = 0
    while i < len(args):
        if args[i] in _GROUP_VALUE_OPTIONS:
            i += 2  # the option and its value
            continue
        if not args[i].startswith("-"):
            command_at = i
            break
        i += 1
    if command_at is None or any(
        a == "--vault" or a.startswith("--vault=") for a in args[:command_at]
    ):
        return args
    head, tail = list(args[: command_at + 1]), list(args[command_at + 1 :])
    out: list[str] = []
    i = 0
    while i < len(tail):
        word = tail[i]
        if word == "--":
            out.extend(tail[i:])
            break
        if word == "--vault" and i + 1 < len(tail):
            head[command_at:command_at] = [word, tail[i + 1]]
            command_at += 2
            i += 2
            continue
        if word.startswith("--vault="):
            head[command_at:command_at] = [word]
            command_at += 1
            i += 1
            continue
        out.append(word)
        i += 1
    return head + out


def _usage_error(exc: click.UsageError) -> NoReturn:
    """One line instead of click's usage block, pointing at the command's help."""
    if os.environ.get("MDMEM_DEBUG"):
        raise exc
    where = exc.ctx.command_path if exc.ctx is not None else "mdmem"
    message = " ".join(exc.format_message().split()).rstrip(".")
    click.echo(f"error: {message} (see {where} --help)", err=True)
    raise click.exceptions.Exit(EXIT_USAGE)


def _one_line(exc: BaseException) -> str:
    return one_line(str(exc)) or type(exc).__name__


@click.group(cls=_Group, name="mdmem", context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--vault",
    "vault_path",
    type=click.Path(file_okay=False),
    default=None,
    help="Vault folder (default: $MDMEM_VAULT, else the nearest folder with mdmem.toml).",
)
@click.option("--agent", default=None, help="Agent name: the git author of writes.")
@click.option("-q", "--quiet", is_flag=True, help="Only errors on stderr.")
@click.version_option(None, "-V", "--version", package_name="mdmem")
@click.pass_context
def main(ctx: click.Context, vault_path: str | None, agent: str | None, quiet: bool) -> None:
    """mdmem: agent memory in a markdown vault under git."""
    logging.basicConfig(
        level=logging.ERROR if quiet else logging.WARNING,
        format=LOG_FORMAT,
    )
    opened = ctx.obj if isinstance(ctx.obj, OpenedVault) else None
    ctx.obj = Context(
        vault_path,
        agent,
        quiet,
        opened.vault if opened else None,
        opened.cwd if opened else None,
    )


@contextmanager
def progress_bars(enabled: bool = True) -> Iterator[Callable[[str, int, int], None]]:
    """One rich bar per phase (keyword, vectors, import...) on stderr, on a terminal only;
    silent otherwise. The bars start at the first report: a quick command shows none
    and doesn't pay for importing rich."""
    if not enabled or not sys.stderr.isatty():
        yield lambda phase, done, total: None
        return
    with ExitStack() as stack:
        tasks: dict[str, Any] = {}
        bars: list[Any] = []

        def update(phase: str, done: int, total: int) -> None:
            if not bars:
                from rich.console import Console
                from rich.progress import (
                    BarColumn,
                    MofNCompleteColumn,
                    Progress,
                    TimeRemainingColumn,
                )

                bars.append(
                    stack.enter_context(
                        Progress(
                            "[progress.description]{task.description}",
                            BarColumn(),
                            MofNCompleteColumn(),
                            TimeRemainingColumn(),
                            console=Console(stderr=True),
                            transient=True,
                        )
                    )
                )
            progress = bars[0]
            if phase not in tasks:
                tasks[phase] = progress.add_task(phase, total=total)
            progress.update(tasks[phase], completed=done, total=total)

        yield update
