"""``mdmem providers``: the embedders, LLM clients and rerankers this install can use."""

from __future__ import annotations

import click

from mdmem.cli.context import emit, json_option, main

__all__ = ["providers_cmd"]


@main.command("providers")
@json_option
def providers_cmd(as_json: bool) -> None:
    """Installed providers by kind: mdmem's own, then those packages register
    (entry point groups mdmem.embedders, mdmem.llms, mdmem.rerankers)."""
    from mdmem.index import registry  # reads entry points: only for this command

    found = {kind: registry.available(kind) for kind in registry.GROUPS}

    def human() -> None:
        for kind, names in found.items():
            click.echo(f"{kind} ({registry.GROUPS[kind]}): {', '.join(names) or 'none'}")

    emit(found, as_json, human)
