"""``mdmem demo``: the tour of examples/demo.sh on a fresh vault, with nothing but mdmem.

What a person runs right after ``pip install``/``pipx install``: no checkout, no
``make``, no network, no API key. Every step is a Vault verb the CLI also has;
each prints what it did, then the vault is left for the person to open.
"""

from __future__ import annotations

from pathlib import Path

import click

from mdmem.cli.context import Context, main

__all__ = ["demo"]

#: (text, kind, tags, scope) remembered by the tour.
_MEMORIES = (
    ("The user prefers metric units.", "preference", ("units",), None),
    ("Production deploys happen on Tuesdays after the standup.", "decision", ("deploy",), None),
    ("The staging database is reset every night at 02:00 UTC.", "gotcha", ("staging",), None),
    (
        "Launch of the spring campaign is planned for May 12.",
        "fact",
        ("launch",),
        "project:marketing",
    ),
)
_QUESTIONS = ("when do we deploy to production?", "which measurement system does the user like?")


def _step(title: str) -> None:
    click.secho(f"== {title}", bold=True)


@main.command("demo")
@click.argument("path", type=click.Path(file_okay=False), default="demo-vault")
@click.pass_obj
def demo(obj: Context, path: str) -> None:
    """Make a demo vault at PATH (default ./demo-vault) and tour it: remember, recall, consolidate.

    Offline and local: the default embedder ships with mdmem. PATH must not
    exist yet; afterwards open it in Obsidian, or try `mdmem --vault PATH ui`.
    """
    from mdmem.errors import VaultExistsError
    from mdmem.vault import Vault

    root = Path(path)
    if root.exists():
        # init would adopt a folder of notes; the tour's memories don't belong in them.
        raise VaultExistsError(f"{path} exists already: mdmem demo makes a new vault")
    agent = obj.agent or "demo-agent"
    _step(f"init {root}")
    vault = Vault.init(root, agent=agent)
    try:
        _step("remember")
        for text, kind, tags, scope in _MEMORIES:
            m = vault.remember(text, kind=kind, tags=tags, scope=scope)
            click.echo(f"{m.id}  {m.path}:{m.line}  [{m.kind}] {m.text}")
        click.echo(
            f"{vault.log('Compared three vector databases; FAISS wins.', 'Research').id}"
            "  daily log entry"
        )
        click.echo(f"{vault.journal('I should confirm units before converting.').id}  journal")
        click.echo(f"{vault.learn('Docker', 'Multi-stage builds keep images small.').id}  learning")

        _step("idempotent: the same fact again")
        again = vault.remember("the user prefers metric units", kind="preference")
        click.echo(f"{again.id} was_new={again.was_new}")

        _step("supersede: deploy day changed")
        old = vault.remember(_MEMORIES[1][0], kind="decision")
        new = vault.supersede(old.id, "Production deploys happen on Thursdays after the standup.")
        click.echo(f"{old.id} superseded by {new.id}: {new.text}")

        _step("recall (by meaning: the words differ)")
        for question in _QUESTIONS:
            hits = vault.recall(question, k=2)
            click.echo(f"? {question}" + ("  (degraded)" if hits.degraded else ""))
            for hit in hits.items:
                click.echo(f"  {hit.score:.3f}  {hit.path}:{hit.line_start}  {hit.text}")

        _step("a short chat session, then consolidate it (offline: extractive)")
        chat = vault.session("demo-chat", source="cli", contact="user:demo")
        chat.record("user", "I prefer answers in bullet points, and my team is in Lisbon.")
        chat.record("assistant", "Noted: bullet points, Lisbon team.")
        result = vault.consolidate()
        click.echo(
            f"{result.consolidated} turns -> {len(result.episodes)} episode, "
            f"{len(result.facts)} new facts ({result.model})"
        )

        _step("history: every change is a git commit")
        for version in vault.history(old.id):
            click.echo(f"  {version.date}  {version.author}  {version.subject}")
    finally:
        vault.close()
    click.echo(
        f"\nThe vault is {root}/ (markdown under git). Next: "
        f'mdmem --vault {path} recall "deploy day", or mdmem --vault {path} ui'
    )
