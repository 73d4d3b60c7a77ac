"""``mdmem usefulness …``: feedback on recalled memories, and their trust (``vault.usefulness``)."""

from __future__ import annotations

import click

from mdmem.cli.context import Context, emit, json_option, main

__all__ = ["feedback_cmd", "show_cmd", "usefulness_group"]


@main.group("usefulness")
def usefulness_group() -> None:
    """Tell mdmem whether a recalled memory helped; see its hits and trust."""


@usefulness_group.command("feedback")
@click.argument("memory_id")
@click.option("--helpful/--unhelpful", default=None, help="Did recalling it help?")
@json_option
@click.pass_obj
def feedback_cmd(obj: Context, memory_id: str, helpful: bool | None, as_json: bool) -> None:
    """Mark a recalled memory helpful or unhelpful (moves its trust score)."""
    if helpful is None:
        raise click.UsageError("say --helpful or --unhelpful")
    score = obj.vault().usefulness.feedback(memory_id, helpful)
    emit(
        score,
        as_json,
        lambda: click.echo(f"{score.id}: trust {score.trust:.2f} after {score.hits} recall hits"),
    )


@usefulness_group.command("show")
@click.argument("memory_id")
@json_option
@click.pass_obj
def show_cmd(obj: Context, memory_id: str, as_json: bool) -> None:
    """A memory's recall count, trust and feedback so far."""
    u = obj.vault().usefulness.get(memory_id)
    emit(
        u,
        as_json,
        lambda: click.echo(
            f"{u.id}: recalled {u.hits} times, trust {u.trust:.2f} "
            f"({u.helpful} helpful, {u.unhelpful} not)"
        ),
    )
