"""``mdmem contacts ...``: contact profiles and identity links (the host's side)."""

from __future__ import annotations

from typing import Any

import click

from mdmem.cli.context import Context, emit, json_option, main

__all__ = ["contacts_group"]


def _show(profile: Any) -> None:
    name = f" ({profile.display_name})" if profile.display_name else ""
    click.echo(f"{profile.person}{name} → {profile.path}")
    click.echo(f"  platform ids: {', '.join(profile.platform_ids) or 'none'}")
    click.echo(f"  seen: {profile.first_seen or '-'} … {profile.last_seen or '-'}")
    click.echo(f"  facts: {', '.join(profile.facts) or 'none'}")


@main.group("contacts")
def contacts_group() -> None:
    """Contact profiles (contacts/<kind>/<name>.md) and identity links.

    `mdmem contacts link telegram:123 user:alice` makes turns from telegram:123
    resolve to user:alice (and record into that scope when a session names no scope).
    """


@contacts_group.command("list")
@json_option
@click.pass_obj
def list_cmd(obj: Context, as_json: bool) -> None:
    """Every contact profile."""
    profiles = obj.vault().contacts.list()

    def human() -> None:
        for p in profiles:
            _show(p)
        if not profiles:
            click.echo("no contacts yet")

    emit(profiles, as_json, human)


@contacts_group.command("show")
@click.argument("who")
@json_option
@click.pass_obj
def show_cmd(obj: Context, who: str, as_json: bool) -> None:
    """The profile of WHO: a person (user:alice) or a platform id (telegram:123)."""
    profile = obj.vault().contacts.profile(who)
    emit(profile, as_json, lambda: _show(profile))


@contacts_group.command("link")
@click.argument("platform_id")
@click.argument("person")
@click.option("--name", "display_name", default=None, help="The person's display name.")
@json_option
@click.pass_obj
def link_cmd(
    obj: Context, platform_id: str, person: str, display_name: str | None, as_json: bool
) -> None:
    """Link PLATFORM_ID (telegram:123) to PERSON (user:alice)."""
    profile = obj.vault().contacts.link(platform_id, person, display_name=display_name)
    emit(profile, as_json, lambda: _show(profile))


@contacts_group.command("unlink")
@click.argument("platform_id")
@json_option
@click.pass_obj
def unlink_cmd(obj: Context, platform_id: str, as_json: bool) -> None:
    """Remove PLATFORM_ID from the person it is linked to."""
    profile = obj.vault().contacts.unlink(platform_id)
    emit(profile, as_json, lambda: _show(profile))


@contacts_group.command("rename")
@click.argument("who")
@click.argument("display_name")
@json_option
@click.pass_obj
def rename_cmd(obj: Context, who: str, display_name: str, as_json: bool) -> None:
    """Set the display name of WHO."""
    profile = obj.vault().contacts.rename(who, display_name)
    emit(profile, as_json, lambda: _show(profile))


@contacts_group.command("refresh")
@click.argument("who", required=False)
@json_option
@click.pass_obj
def refresh_cmd(obj: Context, who: str | None, as_json: bool) -> None:
    """Re-list the facts in WHO's profile (or every profile), e.g. after consolidation."""
    profiles = obj.vault().contacts.refresh(who)

    def human() -> None:
        for p in profiles:
            _show(p)

    emit(profiles, as_json, human)
