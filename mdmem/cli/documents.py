"""``mdmem library ingest PATH...``: documents into ``documents/`` as recallable chunks."""

from __future__ import annotations

from pathlib import Path

import click

from mdmem.cli.context import EXIT_ERROR, Context, emit, json_option, scope_option
from mdmem.cli.library import library_group

__all__ = ["ingest_cmd"]


@library_group.command("ingest")
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True))
@scope_option
@click.option(
    "--force",
    is_flag=True,
    help="Replace chunks a person edited by hand in documents/ (the edit stays in git).",
)
@json_option
@click.pass_obj
def ingest_cmd(
    obj: Context, paths: tuple[str, ...], scope: str | None, force: bool, as_json: bool
) -> None:
    """Copy or convert markdown, text, HTML or PDF files into documents/ as chunks.

    A folder means every supported file under it (hidden entries, symlinks,
    FIFOs and devices, and vaults inside it skipped). A file that can't be
    ingested is reported and the rest go in (exit status 1 if any failed).
    A document's text is bounded (a PDF's by its size): what is left out is
    reported, and the document's frontmatter says `cut:`.

    Re-ingesting a changed file rewrites only its changed chunks; an unchanged
    file writes nothing. A chunk edited by hand is kept unless the new version
    changes it, which is refused without --force. Recall them with --kind
    document_chunk, or leave them out with --exclude-kind document_chunk.
    """
    results = obj.vault().library.ingest(
        [Path(p) for p in paths],
        scope=scope,
        force=force,
        on_skip=lambda name, why: click.echo(f"skipped {name} ({why})", err=True),
    )

    def human() -> None:
        for r in results:
            if r.error is not None:
                click.echo(f"not ingested {r.source}: {r.error}", err=True)
                continue
            if r.cut:
                click.echo(f"note: {r.path}: {r.cut}", err=True)
            if not r.written:
                click.echo(f"unchanged {r.path} ({len(r.chunks)} chunks)")
                continue
            kept = f", {len(r.kept_edits)} hand-edited kept" if r.kept_edits else ""
            click.echo(
                f"ingested {r.path}: {len(r.chunks)} chunks ({len(r.added)} new, "
                f"{len(r.changed)} changed, {len(r.removed)} removed, {len(r.unchanged)} kept"
                f"{kept})"
            )

    emit(results, as_json, human)
    if any(r.error is not None for r in results):
        raise click.exceptions.Exit(EXIT_ERROR)
