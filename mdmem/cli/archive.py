"""``mdmem archive`` / ``mdmem unarchive``: hide a memory from recall and lists, reversibly."""

from __future__ import annotations

import click

from mdmem.cli.context import Context, emit, json_option, main


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
