"""The ``mdmem`` command: a thin click layer over :class:`mdmem.Vault`.

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
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NoReturn, TypeVar

import click

from .errors import MdmemError
from .models import KINDS, Memory, to_jsonable
from .recall import cite_context
from .vault import Vault, find_vault_root

F = TypeVar("F", bound=Callable[..., Any])

EXIT_ERROR = 1
EXIT_USAGE = 2  # click's (and argparse's) code for a bad command line
EXIT_INTERNAL = 2


class _Context:
    def __init__(self, vault_path: str | None, agent: str | None, quiet: bool) -> None:
        self.vault_path = vault_path
        self.agent = agent
        self.quiet = quiet
        self._vault: Vault | None = None

    def vault(self) -> Vault:
        if self._vault is None:
            path = self.vault_path or os.environ.get("MDMEM_VAULT")
            root = Path(path) if path else find_vault_root()
            self._vault = Vault.open(root, agent=self.agent)
        return self._vault


def _emit(data: Any, as_json: bool, human: Callable[[], None]) -> None:
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


def _read_text(text: str) -> str:
    if text == "-":
        return sys.stdin.read()
    return text


def _memory_line(verb: str, memory: Memory) -> None:
    status = "" if memory.was_new else " (already known)"
    click.echo(f"{verb} {memory.id} → {memory.path}:{memory.line}{status}")


class _Group(click.Group):
    """Turns library and usage errors into one line and an exit code."""

    def make_context(
        self,
        info_name: str | None,
        args: list[str],
        parent: click.Context | None = None,
        **extra: Any,
    ) -> click.Context:
        # The group's own options (`mdmem --bogus`) are parsed here, before invoke.
        try:
            return super().make_context(info_name, args, parent, **extra)
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
            click.echo(f"error: {_one_line(exc)}", err=True)
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


def _usage_error(exc: click.UsageError) -> NoReturn:
    """One line instead of click's usage block, pointing at the command's help."""
    if os.environ.get("MDMEM_DEBUG"):
        raise exc
    where = exc.ctx.command_path if exc.ctx is not None else "mdmem"
    message = " ".join(exc.format_message().split()).rstrip(".")
    click.echo(f"error: {message} (see {where} --help)", err=True)
    raise click.exceptions.Exit(EXIT_USAGE)


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text or type(exc).__name__


@click.group(cls=_Group, name="mdmem")
@click.option(
    "--vault",
    "vault_path",
    type=click.Path(file_okay=False),
    default=None,
    help="Vault folder (default: $MDMEM_VAULT, else the nearest folder with mdmem.toml).",
)
@click.option("--agent", default=None, help="Agent name: the git author of writes.")
@click.option("-q", "--quiet", is_flag=True, help="Only errors on stderr.")
@click.version_option(package_name="mdmem")
@click.pass_context
def main(ctx: click.Context, vault_path: str | None, agent: str | None, quiet: bool) -> None:
    """mdmem: agent memory in a markdown vault under git."""
    logging.basicConfig(
        level=logging.ERROR if quiet else logging.WARNING,
        format="%(levelname)s: %(message)s",
    )
    ctx.obj = _Context(vault_path, agent, quiet)


# ------------------------------------------------------------------ writes ----


@main.command()
@click.argument("path", type=click.Path(file_okay=False), default=".")
@click.option("--agent", "agent_name", default=None, help="Default agent name for this vault.")
@json_option
@click.pass_obj
def init(obj: _Context, path: str, agent_name: str | None, as_json: bool) -> None:
    """Create a vault at PATH: template files, git init, first commit."""
    vault = Vault.init(path, agent=agent_name or obj.agent)
    _emit(
        {"root": str(vault.root), "state_dir": str(vault.state_dir)},
        as_json,
        lambda: click.echo(f"initialised mdmem vault at {vault.root}"),
    )


@main.command()
@click.argument("text")
@click.option("--kind", type=click.Choice(KINDS), default="fact", show_default=True)
@click.option("-t", "--tag", "tags", multiple=True, help="Tag (repeatable).")
@scope_option
@click.option("--created", default=None, help="Creation date/time (ISO), default now.")
@click.option("--redact", is_flag=True, help="Store secrets redacted instead of refusing.")
@json_option
@click.pass_obj
def remember(
    obj: _Context,
    text: str,
    kind: str,
    tags: tuple[str, ...],
    scope: str | None,
    created: str | None,
    redact: bool,
    as_json: bool,
) -> None:
    """Store TEXT as a memory ('-' reads stdin). Idempotent per scope."""
    memory = obj.vault().remember(
        _read_text(text),
        kind=kind,
        tags=tags,
        scope=scope,
        created=created,
        secrets="redact" if redact else None,
    )
    _emit(memory, as_json, lambda: _memory_line("remembered", memory))


@main.command("log")
@click.argument("text")
@click.option("-c", "--category", default="Note", show_default=True)
@click.option("-t", "--tag", "tags", multiple=True)
@scope_option
@click.option("--redact", is_flag=True, help="Store secrets redacted instead of refusing.")
@json_option
@click.pass_obj
def log_cmd(
    obj: _Context,
    text: str,
    category: str,
    tags: tuple[str, ...],
    scope: str | None,
    redact: bool,
    as_json: bool,
) -> None:
    """Append TEXT to today's daily log under '## HH:MM · CATEGORY'."""
    memory = obj.vault().log(
        _read_text(text),
        category=category,
        tags=tags,
        scope=scope,
        secrets="redact" if redact else None,
    )
    _emit(memory, as_json, lambda: _memory_line("logged", memory))


@main.command()
@click.argument("text")
@click.option("-t", "--tag", "tags", multiple=True)
@scope_option
@json_option
@click.pass_obj
def journal(
    obj: _Context, text: str, tags: tuple[str, ...], scope: str | None, as_json: bool
) -> None:
    """Add a dated reflection to JOURNAL.md."""
    memory = obj.vault().journal(_read_text(text), tags=tags, scope=scope)
    _emit(memory, as_json, lambda: _memory_line("journaled", memory))


@main.command()
@click.argument("topic")
@click.argument("text")
@click.option("-t", "--tag", "tags", multiple=True)
@scope_option
@json_option
@click.pass_obj
def learn(
    obj: _Context, topic: str, text: str, tags: tuple[str, ...], scope: str | None, as_json: bool
) -> None:
    """Add TEXT under '## Topic: TOPIC' in LEARNING.md."""
    memory = obj.vault().learn(topic, _read_text(text), tags=tags, scope=scope)
    _emit(memory, as_json, lambda: _memory_line("learned", memory))


@main.command()
@click.argument("memory_id")
@click.option("--reason", default=None, help="Why (goes into the commit message).")
@click.option(
    "--purge", is_flag=True, help="Also erase the text from every commit (rewrites history)."
)
@click.option("--yes", is_flag=True, help="Confirm --purge.")
@json_option
@click.pass_context
def forget(
    ctx: click.Context, memory_id: str, reason: str | None, purge: bool, yes: bool, as_json: bool
) -> None:
    """Remove a memory from its file (git history keeps it, unless --purge --yes)."""
    obj: _Context = ctx.obj
    if purge:
        from .cli_gitnative import purge_cmd

        ctx.invoke(purge_cmd, memory_id=memory_id, yes=yes, as_json=as_json)
        return
    memory = obj.vault().forget(memory_id, reason=reason)
    _emit(
        memory, as_json, lambda: click.echo(f"forgot {memory.id} (was {memory.path}:{memory.line})")
    )


@main.command()
@click.argument("memory_id")
@click.argument("text")
@json_option
@click.pass_obj
def supersede(obj: _Context, memory_id: str, text: str, as_json: bool) -> None:
    """Replace a memory with TEXT; the old one is kept, marked superseded."""
    memory = obj.vault().supersede(memory_id, _read_text(text))
    _emit(
        memory,
        as_json,
        lambda: click.echo(f"superseded {memory_id} by {memory.id} → {memory.path}:{memory.line}"),
    )


@main.command()
@click.argument("memory_id")
@click.option(
    "--status",
    type=click.Choice(["resolved", "superseded", "active"]),
    default="resolved",
    show_default=True,
)
@json_option
@click.pass_obj
def resolve(obj: _Context, memory_id: str, status: str, as_json: bool) -> None:
    """Mark a memory resolved (it leaves default recall)."""
    memory = obj.vault().resolve(memory_id, status=status)
    _emit(memory, as_json, lambda: click.echo(f"{memory.id} is now {memory.status}"))


# ------------------------------------------------------------------- reads ----


@main.command()
@click.argument("memory_id")
@json_option
@click.pass_obj
def get(obj: _Context, memory_id: str, as_json: bool) -> None:
    """Show one memory."""
    memory = obj.vault().get(memory_id)

    def human() -> None:
        tags = " ".join(f"#{t}" for t in memory.tags)
        click.echo(f"{memory.id}  {memory.kind}  {memory.status}  {memory.scope or '(root)'}")
        span = f"{memory.path}:{memory.line}-{memory.line_end}"
        click.echo(f"{span}  created {memory.created:%Y-%m-%d %H:%M}")
        if tags:
            click.echo(tags)
        click.echo()
        click.echo(memory.text)

    _emit(memory, as_json, human)


@main.command()
@click.argument("memory_id")
@json_option
@click.pass_obj
def history(obj: _Context, memory_id: str, as_json: bool) -> None:
    """Every version of one memory, from git."""
    versions = obj.vault().history(memory_id)

    def human() -> None:
        if not versions:
            click.echo("no committed versions yet")
        for v in versions:
            who = f"{v.author}{'' if v.is_agent else ' (human)'}"
            click.echo(f"{v.commit[:10]}  {v.date}  {who}  {v.subject}")
            if v.text is None:
                click.echo("    (removed)")
            else:
                state = f" [{v.status}]" if v.status and v.status != "active" else ""
                click.echo(f"    {v.path}{state}: {v.text}")

    _emit(versions, as_json, human)


@main.command()
@json_option
@click.pass_obj
def status(obj: _Context, as_json: bool) -> None:
    """Counts by kind and scope, dirty files, last commit, index freshness."""
    st = obj.vault().status()

    def human() -> None:
        click.echo(f"vault    {st.root}")
        click.echo(f"agent    {st.agent}")
        click.echo(f"state    {st.state_dir}")
        click.echo(f"memories {st.memories} in {st.files} files")
        for title, counts in (
            ("kind", st.by_kind),
            ("scope", st.by_scope),
            ("status", st.by_status),
        ):
            if counts:
                click.echo(f"  by {title}: " + ", ".join(f"{k} {v}" for k, v in counts.items()))
        if st.last_commit:
            c = st.last_commit
            click.echo(f"last commit {c.sha[:10]} {c.date} {c.author}: {c.subject}")
        if st.dirty:
            click.echo(f"uncommitted edits: {', '.join(st.dirty)}")
        for path, reason in st.skipped.items():
            click.echo(f"skipped {path}: {reason}")
        for key, value in st.index.items():
            click.echo(f"index {key}: {value}")
        for branch in st.reviews:
            click.echo(f"waiting for review: {branch} (mdmem review {branch})")

    _emit(st, as_json, human)


# ------------------------------------------------------------------ recall ----


def _recall_options(func: F) -> F:
    for option in reversed(
        [
            click.option("-k", "k", type=int, default=None, help="How many memories (default 5)."),
            click.option("--kind", "kinds", multiple=True, type=click.Choice(KINDS)),
            click.option("-t", "--tag", "tags", multiple=True),
            click.option("--scope", "scopes", multiple=True, help="Scope filter (repeatable)."),
            click.option("--since", default=None, help="Created on/after (ISO date or time)."),
            click.option("--until", default=None, help="Created on/before (ISO date or time)."),
            click.option(
                "--all", "include_inactive", is_flag=True, help="Include resolved and superseded."
            ),
            click.option(
                "--mode",
                type=click.Choice(["hybrid", "keyword", "vector"]),
                default="hybrid",
                show_default=True,
            ),
            click.option(
                "--as-of", "as_of", default=None, help="A commit or date: the vault as it was."
            ),
        ]
    ):
        func = option(func)
    return func


def _filters(
    k: int | None,
    kinds: tuple[str, ...],
    tags: tuple[str, ...],
    scopes: tuple[str, ...],
    since: str | None,
    until: str | None,
    include_inactive: bool,
    mode: str,
    as_of: str | None,
) -> dict[str, Any]:
    return {
        "k": k,
        "kinds": kinds or None,
        "tags": tags or None,
        "scope": [("" if s in ("root", "(root)") else s) for s in scopes] or None,
        "since": since,
        "until": until,
        "include_inactive": include_inactive,
        "mode": mode,
        "as_of": as_of,
    }


@main.command()
@click.argument("query")
@_recall_options
@json_option
@click.pass_obj
def recall(obj: _Context, query: str, as_json: bool, **filters: Any) -> None:
    """The memories most relevant to QUERY, with file, lines and scores."""
    result = obj.vault().recall(query, **_filters(**filters))

    def human() -> None:
        if result.degraded:
            click.echo("(degraded: vectors missing or stale, keyword results only)", err=True)
        if not result.items:
            click.echo("no relevant memories")
        for hit in result.items:
            where = f"lines {hit.line_start}-{hit.line_end}, {hit.kind}"
            click.echo(f"{hit.score:.3f}  {hit.citation}  ({where})")
            for line in hit.text.splitlines()[:6]:
                click.echo(f"       {line}")

    _emit(result, as_json, human)


@main.command()
@click.argument("query")
@click.option("--max-chars", type=int, default=6000, show_default=True)
@_recall_options
@json_option
@click.pass_obj
def context(obj: _Context, query: str, max_chars: int, as_json: bool, **filters: Any) -> None:
    """A "## Recalled Memory" block for a prompt, citing path#^id."""
    # vault.context() in two steps, so --json can list the ids the block cites.
    result = obj.vault().recall(query, **_filters(**filters))
    block, cited = cite_context(result, max_chars)
    _emit(
        {
            "query": query,
            "context": block,
            "ids": [hit.id for hit in cited],
            "citations": [hit.citation for hit in cited],
            "degraded": result.degraded,
        },
        as_json,
        lambda: click.echo(block, nl=False),
    )


@main.command()
@click.option("--full", is_flag=True, help="Drop and rebuild both indexes.")
@json_option
@click.pass_obj
def reindex(obj: _Context, full: bool, as_json: bool) -> None:
    """Bring the keyword and vector indexes up to date (or rebuild them)."""
    vault = obj.vault()
    with progress_bars(enabled=not as_json and not obj.quiet) as progress:
        stats = vault.reindex(full=full, progress=progress)
    _emit(
        stats,
        as_json,
        lambda: click.echo(
            f"indexed {stats.blocks} blocks: {stats.keyword_docs} keyword docs, "
            f"{stats.vectors} vectors ({stats.embedder})"
        ),
    )


@main.command()
@click.option(
    "--fix", is_flag=True, help="Repair derived state (indexes, temp files, stale locks)."
)
@json_option
@click.pass_obj
def doctor(obj: _Context, fix: bool, as_json: bool) -> None:
    """Check files against both indexes, the manifest and git (exit 1 if unhealthy)."""
    report = obj.vault().doctor(fix=fix)

    def human() -> None:
        for check in report.checks:
            bad = [p for p in report.problems if p.check == check]
            click.echo(f"{'ok ' if not bad else 'BAD'}  {check}")
            for p in bad:
                mark = "fixed" if p.detail in report.fixed else ("fixable" if p.fixable else "")
                click.echo(f"       {p.detail}" + (f"  [{mark}]" if mark else ""))
        if not report.ok and not fix and any(p.fixable for p in report.problems):
            click.echo("run `mdmem doctor --fix` to repair what can be repaired")

    _emit({"ok": report.ok, "problems": report.problems, "fixed": report.fixed}, as_json, human)
    if not report.ok:
        raise click.exceptions.Exit(EXIT_ERROR)


@main.command()
@click.option(
    "--debounce",
    type=float,
    default=0.3,
    show_default=True,
    help="Quiet seconds before re-indexing.",
)
@click.option("--commit", is_flag=True, help="Also commit human edits after each quiet period.")
@click.pass_obj
def watch(obj: _Context, debounce: float, commit: bool) -> None:
    """Keep the indexes live while people edit the vault (Ctrl-C stops)."""
    from .watch import Watcher

    vault = obj.vault()

    def report(changed: list[str]) -> None:
        if changed and not obj.quiet:
            click.echo(f"re-indexed: {', '.join(changed)}")

    click.echo(f"watching {vault.root} (Ctrl-C to stop)", err=True)
    watcher = Watcher(vault, debounce=debounce, commit=commit, on_refresh=report)
    try:
        watcher.run_forever()
    except KeyboardInterrupt:
        pass
    finally:
        vault.close()


@contextmanager
def progress_bars(enabled: bool = True) -> Iterator[Callable[[str, int, int], None]]:
    """One rich bar per phase (keyword, vectors...) on a terminal; silent otherwise."""
    if not enabled or not sys.stderr.isatty():
        yield lambda phase, done, total: None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeRemainingColumn

    with Progress(
        "[progress.description]{task.description}",
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        transient=True,
    ) as progress:
        tasks: dict[str, Any] = {}

        def update(phase: str, done: int, total: int) -> None:
            if phase not in tasks:
                tasks[phase] = progress.add_task(phase, total=total)
            progress.update(tasks[phase], completed=done, total=total)

        yield update


# Command groups that live in their own modules register themselves on `main`.
from . import cli_gitnative, cli_lifecycle, cli_serve  # noqa: E402, F401

if __name__ == "__main__":  # pragma: no cover
    # Run as `python -m mdmem.cli`: use the imported module's group, on which
    # the other modules registered their commands.
    from mdmem.cli import main as _registered_main

    _registered_main()
