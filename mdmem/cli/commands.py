"""The core commands: writes, reads, recall and maintenance, over :class:`mdmem.Vault`."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import click

from mdmem.cli.context import (
    EXIT_ERROR,
    Context,
    F,
    emit,
    json_option,
    main,
    memory_line,
    progress_bars,
    read_text,
    scope_option,
)
from mdmem.cli.git import purge_cmd
from mdmem.cli.recall_controls import control_options, controls_of
from mdmem.models import KINDS, one_line, to_jsonable
from mdmem.store.importance import ORIGINS

if TYPE_CHECKING:
    from mdmem.memory.desks.compose import Composed
    from mdmem.memory.desks.reading import Reading
    from mdmem.models import Recall

# ------------------------------------------------------------------ writes ----

# The command line's spelling of secrets="redact" (named by the guard's refusal).
_redact_option = click.option(
    "--redact", is_flag=True, help="Store secrets redacted instead of refusing."
)


@main.command()
@click.argument("path", type=click.Path(file_okay=False), default=".")
@click.option("--agent", "agent_name", default=None, help="Default agent name for this vault.")
@click.option(
    "--author",
    default=None,
    metavar="'NAME <EMAIL>'",
    help="Who the folder's existing files are committed as (default: your git identity).",
)
@json_option
@click.pass_obj
def init(
    obj: Context, path: str, agent_name: str | None, author: str | None, as_json: bool
) -> None:
    """Create a vault at PATH: template files, git init, first commit.

    A folder that already holds files (an Obsidian vault, notes under git) is
    adopted: your files are committed first, as yours; settings files are
    merged (every key of yours kept); mdmem's files go in the agent's commit.
    """
    from mdmem.vault import Vault  # loaded on first use: `mdmem --help` stays quick

    vault = Vault.init(path, agent=agent_name or obj.agent, author=author)
    adoption = vault.admin.adoption
    emit(
        {"root": str(vault.root), "state_dir": str(vault.admin.state_dir), "adoption": adoption},
        as_json,
        lambda: click.echo(
            "\n".join(adoption.lines()) if adoption else f"initialised {vault.root}"
        ),
    )


@main.command()
@click.argument("text")
@click.option("--kind", type=click.Choice(KINDS), default="fact", show_default=True)
@click.option("-t", "--tag", "tags", multiple=True, help="Tag (repeatable).")
@scope_option
@click.option("--created", default=None, help="Creation date/time (ISO), default now.")
@_redact_option
@click.option("--importance", type=int, default=None, help="1-10 (OAK).")
@click.option("--origin", type=click.Choice(ORIGINS), default=None, help="Caps importance at 5.")
@json_option
@click.pass_obj
def remember(
    obj: Context,
    text: str,
    kind: str,
    tags: tuple[str, ...],
    scope: str | None,
    created: str | None,
    redact: bool,
    importance: int | None,
    origin: str | None,
    as_json: bool,
) -> None:
    """Store TEXT as a memory ('-' reads stdin). Idempotent per scope."""
    memory = obj.vault().remember(
        read_text(text),
        kind=kind,
        tags=tags,
        scope=scope,
        created=created,
        secrets="redact" if redact else None,
        importance=importance,
        origin=origin,
    )

    def human() -> None:
        memory_line("remembered", memory)
        # Auto-supersede retired these: say so, with what they said.
        for old_id in memory.superseded:
            click.echo(f"  superseded {old_id}: {one_line(obj.vault().get(old_id).text, 100)}")

    emit(memory, as_json, human)


@main.command("log")
@click.argument("text")
@click.option("-c", "--category", default="Note", show_default=True)
@click.option("-t", "--tag", "tags", multiple=True)
@scope_option
@_redact_option
@json_option
@click.pass_obj
def log_cmd(
    obj: Context,
    text: str,
    category: str,
    tags: tuple[str, ...],
    scope: str | None,
    redact: bool,
    as_json: bool,
) -> None:
    """Append TEXT to today's daily log under '## HH:MM · CATEGORY'."""
    memory = obj.vault().log(
        read_text(text),
        category=category,
        tags=tags,
        scope=scope,
        secrets="redact" if redact else None,
    )
    emit(memory, as_json, lambda: memory_line("logged", memory))


@main.command()
@click.argument("text")
@click.option("-t", "--tag", "tags", multiple=True)
@scope_option
@_redact_option
@json_option
@click.pass_obj
def journal(
    obj: Context, text: str, tags: tuple[str, ...], scope: str | None, redact: bool, as_json: bool
) -> None:
    """Add a dated reflection to JOURNAL.md."""
    memory = obj.vault().journal(
        read_text(text), tags=tags, scope=scope, secrets="redact" if redact else None
    )
    emit(memory, as_json, lambda: memory_line("journaled", memory))


@main.command()
@click.argument("topic")
@click.argument("text")
@click.option("-t", "--tag", "tags", multiple=True)
@scope_option
@_redact_option
@json_option
@click.pass_obj
def learn(
    obj: Context,
    topic: str,
    text: str,
    tags: tuple[str, ...],
    scope: str | None,
    redact: bool,
    as_json: bool,
) -> None:
    """Add TEXT under '## Topic: TOPIC' in LEARNING.md."""
    memory = obj.vault().learn(
        topic, read_text(text), tags=tags, scope=scope, secrets="redact" if redact else None
    )
    emit(memory, as_json, lambda: memory_line("learned", memory))


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
    obj: Context = ctx.obj
    if purge:
        ctx.invoke(purge_cmd, memory_id=memory_id, yes=yes, as_json=as_json)
        return
    memory = obj.vault().forget(memory_id, reason=reason)
    emit(
        memory, as_json, lambda: click.echo(f"forgot {memory.id} (was {memory.path}:{memory.line})")
    )


@main.command()
@click.argument("memory_id")
@click.argument("text")
@_redact_option
@json_option
@click.pass_obj
def supersede(obj: Context, memory_id: str, text: str, redact: bool, as_json: bool) -> None:
    """Replace a memory with TEXT; the old one is kept, marked superseded."""
    memory = obj.vault().supersede(memory_id, read_text(text), secrets="redact" if redact else None)
    emit(
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
def resolve(obj: Context, memory_id: str, status: str, as_json: bool) -> None:
    """Mark a memory resolved (it leaves default recall)."""
    memory = obj.vault().resolve(memory_id, status=status)
    emit(memory, as_json, lambda: click.echo(f"{memory.id} is now {memory.status}"))


# ------------------------------------------------------------------- reads ----


@main.command()
@click.argument("memory_id")
@json_option
@click.pass_obj
def get(obj: Context, memory_id: str, as_json: bool) -> None:
    """Show one memory."""
    memory = obj.vault().reading().get(memory_id)

    def human() -> None:
        tags = " ".join(f"#{t}" for t in memory.tags)
        click.echo(f"{memory.id}  {memory.kind}  {memory.status}  {memory.scope or '(root)'}")
        span = f"{memory.path}:{memory.line}-{memory.line_end}"
        click.echo(f"{span}  created {memory.created:%Y-%m-%d %H:%M}")
        if tags:
            click.echo(tags)
        click.echo()
        click.echo(memory.text)

    emit(memory, as_json, human)


@main.command()
@click.argument("memory_id")
@json_option
@click.pass_obj
def history(obj: Context, memory_id: str, as_json: bool) -> None:
    """Every version of one memory, from git."""
    versions = obj.vault().reading().history(memory_id)

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

    emit(versions, as_json, human)


@main.command()
@json_option
@click.pass_obj
def status(obj: Context, as_json: bool) -> None:
    """Counts by kind and scope, dirty files, last commit, index freshness."""
    st = obj.vault().status()

    def human() -> None:
        click.echo(f"vault    {st.root}")
        click.echo(f"agent    {st.agent}")
        click.echo(f"state    {st.state_dir}")
        click.echo(f"memories {st.memories}, note sections {st.notes}, in {st.files} files")
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
            click.echo(f"waiting for review: {branch} (mdmem git review {branch})")

    emit(st, as_json, human)


def _recall_options(func: F) -> F:
    for option in reversed(
        [
            click.option("-k", "k", type=int, default=None, help="How many memories (default 5)."),
            click.option("--kind", "kinds", multiple=True, type=click.Choice(KINDS)),
            click.option(
                "--exclude-kind",
                "exclude_kinds",
                multiple=True,
                type=click.Choice(KINDS),
                help="Leave a kind out (e.g. document_chunk).",
            ),
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
    return control_options(func)


def _filters(
    k: int | None,
    kinds: tuple[str, ...],
    exclude_kinds: tuple[str, ...],
    tags: tuple[str, ...],
    scopes: tuple[str, ...],
    since: str | None,
    until: str | None,
    include_inactive: bool,
    mode: str,
    as_of: str | None,
    **controls: Any,
) -> dict[str, Any]:
    return {
        **controls_of(controls),
        "k": k,
        # "-kind" leaves a kind out (RecallQuery); mixing both is refused there.
        "kinds": (*kinds, *(f"-{x}" for x in exclude_kinds)) or None,
        "tags": tags or None,
        "scope": [("" if s in ("root", "(root)") else s) for s in scopes] or None,
        "since": since,
        "until": until,
        "include_inactive": include_inactive,
        "mode": mode,
        "as_of": as_of,
    }


def _reading(obj: Context, filters: dict[str, Any]) -> Reading:
    """``--scope`` reads as a reader of those scopes (copies made from other scopes'
    memories stay out too), not only as a filter; no ``--scope`` reads as everyone."""
    scopes = filters.get("scopes") or ()
    vault = obj.vault()
    return vault.reading(scopes=scopes) if scopes else vault.reading()


_team_option = click.option(
    "--repo",
    default=None,
    type=click.Path(file_okay=False),
    help="Also the team memory of this code repository (default: the one you are in), "
    "once you trust it (mdmem team trust).",
)


def _composed(
    obj: Context,
    reading: Reading,
    repo: str | None,
    query: str,
    result: Recall,
    max_chars: int | None,
) -> Composed:
    """The reading view's composed context for ``result``, with the team tier of
    the checkout the command runs in (or ``--repo``): read from its working tree,
    only once the person trusts it; never written to."""
    from mdmem.team.repo import require_checkout

    where = obj.here(repo)
    if repo is not None:
        require_checkout(where)  # a --repo that is no repository is a mistake worth a line
    composed = reading.compose(query, max_chars, repo=where, recall=result)
    if composed.team.hint and not obj.quiet:
        # For the person; the memories stay out.
        click.echo(f"note: {composed.team.hint}", err=True)
    return composed


@main.command()
@click.argument("query")
@_recall_options
@_team_option
@json_option
@click.pass_obj
def recall(obj: Context, query: str, repo: str | None, as_json: bool, **filters: Any) -> None:
    """The memories most relevant to QUERY, with file, lines and scores.

    Inside a code repository whose team memory you trust (or with --repo), the
    team's accepted memories relevant to QUERY follow, labelled as team memory.
    """
    reading = _reading(obj, filters)
    result = reading.recall(query, **_filters(**filters))
    composed = _composed(obj, reading, repo, query, result, None)

    def human() -> None:
        if result.degraded:
            click.echo(
                f"(degraded: {result.degraded_reason or 'a part of recall is missing'})", err=True
            )
        if not result.items:
            click.echo("no relevant memories")
        elif result.nothing_relevant:
            # The gate's answer first; the closest matches stay visible to audit it.
            click.echo("nothing relevant (closest matches, below the relevance gate:)")
        for hit in result.items:
            where = f"lines {hit.line_start}-{hit.line_end}, {hit.kind}"
            click.echo(f"{hit.score:.3f}  {hit.citation}  ({where})")
            for line in hit.text.splitlines()[:6]:
                click.echo(f"       {line}")
        if composed.team_block:
            click.echo("")
            click.echo(composed.team_block)

    if composed.team.status == "none":
        emit(result, as_json, human)
    else:
        emit({**to_jsonable(result), "team": composed.team_json()}, as_json, human)


@main.command()
@click.argument("query")
@click.option("--max-chars", type=int, default=6000, show_default=True)
@click.option("--explain", is_flag=True, help="Also show each cited memory's score and signals.")
@_recall_options
@_team_option
@json_option
@click.pass_obj
def context(
    obj: Context,
    query: str,
    max_chars: int,
    explain: bool,
    repo: str | None,
    as_json: bool,
    **filters: Any,
) -> None:
    """A "## Recalled Memory" block for a prompt, citing path#^id.

    Inside a code repository whose team memory you trust (or with --repo), the
    team's relevant accepted memories follow in their own labelled, fenced block,
    within the same --max-chars.
    """
    # Recall, then the reading view's composition, so --json can list the ids cited.
    reading = _reading(obj, filters)
    result = reading.recall(query, **_filters(**filters))
    composed = _composed(obj, reading, repo, query, result, max_chars)
    cited = composed.cited
    why = [{"id": h.id, "score": h.score, "scores": h.scores} for h in cited]
    data: dict[str, Any] = {
        "query": query,
        "context": composed.text,
        "ids": [hit.id for hit in cited],
        "citations": [hit.citation for hit in cited],
        "degraded": result.degraded,
    }
    if composed.team.status != "none":
        data["team"] = composed.team_json()
    block = data["context"]
    emit(
        {**data, "why": why} if explain else data,
        as_json,
        lambda: click.echo(block + (explain_lines(why) if explain else ""), nl=False),
    )


def explain_lines(why: list[dict[str, Any]]) -> str:
    """Why each memory is in the block: its fused score and the signals behind it."""
    lines = ["", "## Why these memories"]
    for w in why:
        signals = ", ".join(f"{k} {v:.3f}" for k, v in sorted(w["scores"].items()))
        lines.append(f"- {w['id']}: score {w['score']:.3f} ({signals})")
    return "\n".join(lines) + "\n"


@main.command()
@click.option("--full", is_flag=True, help="Drop and rebuild both indexes.")
@json_option
@click.pass_obj
def reindex(obj: Context, full: bool, as_json: bool) -> None:
    """Bring the keyword and vector indexes up to date (or rebuild them)."""
    vault = obj.vault()
    with progress_bars(enabled=not as_json and not obj.quiet) as progress:
        stats = vault.reindex(full=full, progress=progress)
    emit(
        stats,
        as_json,
        lambda: click.echo(
            f"indexed {stats.blocks} blocks: {stats.keyword_docs} keyword docs, "
            f"{stats.vectors} vectors ({stats.embedder})"
        ),
    )


@main.command()
@click.option(
    "--fix",
    is_flag=True,
    help="Repair derived state (indexes, temp files, stale locks) and merge=union lines.",
)
@json_option
@click.pass_obj
def doctor(obj: Context, fix: bool, as_json: bool) -> None:
    """Check files against both indexes, the manifest and git (exit 1 if unhealthy)."""
    vault = obj.vault()
    with progress_bars(enabled=not as_json and not obj.quiet) as progress:
        report = vault.admin.doctor(fix=fix, progress=progress)

    def human() -> None:
        for check in report.checks:
            bad = [p for p in report.problems if p.check == check]
            click.echo(f"{'ok ' if not bad else 'BAD'}  {check}")
            for p in bad:
                mark = "fixed" if p.detail in report.fixed else ("fixable" if p.fixable else "")
                click.echo(f"       {p.detail}" + (f"  [{mark}]" if mark else ""))
        for notice in report.notices:
            click.echo(f"note: {notice}")
        if not report.ok and not fix and any(p.fixable for p in report.problems):
            click.echo("run `mdmem doctor --fix` to repair what can be repaired")

    emit(
        {
            "ok": report.ok,
            "problems": report.problems,
            "fixed": report.fixed,
            "notices": report.notices,
        },
        as_json,
        human,
    )
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
@json_option
@click.pass_obj
def watch(obj: Context, debounce: float, commit: bool, as_json: bool) -> None:
    """Keep the indexes live while people edit the vault (Ctrl-C stops).

    ``--json`` prints one JSON object per refresh (``{"reindexed": [paths]}``).
    """

    vault = obj.vault()

    def report(changed: list[str]) -> None:
        if not changed:
            return
        if as_json:
            click.echo(json.dumps({"reindexed": changed}, ensure_ascii=False), nl=True)
        elif not obj.quiet:
            click.echo(f"re-indexed: {', '.join(changed)}")

    click.echo(f"watching {vault.root} (Ctrl-C to stop)", err=True)
    watcher = vault.admin.watch(debounce=debounce, commit=commit, on_refresh=report, start=False)
    try:
        watcher.run_forever()
    except KeyboardInterrupt:
        pass
    finally:
        vault.close()


@main.command()
@click.argument("memory_id")
@json_option
@click.pass_obj
def archive(obj: Context, memory_id: str, as_json: bool) -> None:
    """Archive a memory: out of recall and lists, not retired (`unarchive` undoes it)."""
    memory = obj.vault().archive(memory_id)
    emit(memory, as_json, lambda: click.echo(f"{memory.id} is now {memory.status}"))


@main.command()
@click.argument("memory_id")
@json_option
@click.pass_obj
def unarchive(obj: Context, memory_id: str, as_json: bool) -> None:
    """Make an archived memory active again."""
    memory = obj.vault().unarchive(memory_id)
    emit(memory, as_json, lambda: click.echo(f"{memory.id} is now {memory.status}"))
