"""``mdmem ingest PATH...``: documents into ``documents/`` as recallable chunks."""

from __future__ import annotations

from pathlib import Path

import click

from mdmem.cli.context import Context, emit, json_option, main, scope_option
from mdmem.memory.docconvert import SUFFIXES

__all__ = ["ingest_cmd"]


@main.command("ingest")
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True))
@scope_option
@json_option
@click.pass_obj
def ingest_cmd(obj: Context, paths: tuple[str, ...], scope: str | None, as_json: bool) -> None:
    """Copy or convert markdown, text, HTML or PDF files into documents/ as chunks.

    A folder means every supported file under it (hidden ones skipped).

    Re-ingesting a changed file rewrites only its changed chunks; an unchanged
    file writes nothing. Recall them with --kind document_chunk, or leave them
    out with --exclude-kind document_chunk.
    """
    vault = obj.vault()
    files: list[Path] = []
    for given in map(Path, paths):
        if given.is_dir():
            files.extend(
                p
                for p in sorted(given.rglob("*"))
                if p.is_file()
                and p.suffix.lower() in SUFFIXES
                and not any(part.startswith(".") for part in p.relative_to(given).parts)
            )
        else:
            files.append(given)
    results = [vault.ingest(path, scope=scope) for path in files]

    def human() -> None:
        for r in results:
            if not r.written:
                click.echo(f"unchanged {r.path} ({len(r.chunks)} chunks)")
                continue
            click.echo(
                f"ingested {r.path}: {len(r.chunks)} chunks ({len(r.added)} new, "
                f"{len(r.changed)} changed, {len(r.removed)} removed, {len(r.unchanged)} kept)"
            )

    emit(results, as_json, human)
