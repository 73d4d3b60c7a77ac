"""``mdmem admin …``: upkeep (``vault.admin``) and settings.

``cleanup`` (the LLM pass over a scope's MEMORY and USER files), ``retention``
(retired memories redacted after a while), ``config`` (every setting and where
it came from), ``trust`` (let a vault's mdmem.toml name endpoints) and
``providers``. ``doctor`` and ``watch`` stay top-level commands.
"""

from __future__ import annotations

import click

from mdmem.cli.context import Context, emit, json_option, main, scope_option
from mdmem.config import setting_values, trust_vault

__all__ = [
    "admin_group",
    "cleanup_cmd",
    "config_cmd",
    "migrate_cmd",
    "providers_cmd",
    "retention_cmd",
    "trust_cmd",
]


@main.group("admin")
def admin_group() -> None:
    """Upkeep and settings: cleanup, retention, config, trust, providers."""


@admin_group.command("cleanup")
@scope_option
@click.option("--dry-run", is_flag=True, help="Print the diff it would commit; write nothing.")
@click.option(
    "--review/--no-review",
    default=None,
    help="Commit to a review branch for `mdmem git review` (default: [cleanup] review).",
)
@click.option(
    "--if-due", is_flag=True, help="Run only if [cleanup] interval_hours passed since the last run."
)
@json_option
@click.pass_obj
def cleanup_cmd(
    obj: Context,
    scope: str | None,
    dry_run: bool,
    review: bool | None,
    if_due: bool,
    as_json: bool,
) -> None:
    """Merge duplicates, retire replaced facts, settle contradictions (LLM; one commit)."""
    result = obj.vault().admin.cleanup(scope, dry_run=dry_run, review=review, if_due=if_due)

    def human() -> None:
        if result.skipped:
            click.echo(f"skipped: {result.skipped}")
            return
        click.echo(
            f"{result.memories} memories in {result.batches} batches; "
            f"{len(result.actions)} changes, {len(result.rejected)} proposals dropped"
        )
        for action in result.actions:
            what = action.get("ids") or [action.get("id")]
            click.echo(f"  {action['op']} {' '.join(what)}: {action['reason']}")
        for dropped in result.rejected:
            click.echo(f"  dropped ({dropped['why']}): {dropped['action']}")
        if result.branch:
            click.echo(f"proposed on {result.branch} (mdmem git review)")
        elif result.commit:
            click.echo(f"committed {result.commit[:10]}")
        if dry_run and result.diff:
            click.echo(result.diff, nl=False)

    emit(result, as_json, human)


@admin_group.command("retention")
@click.option("--days", type=int, default=None, help="Age of retired memories (default 30).")
@click.option("--apply", is_flag=True, help="Redact them (default: only list them).")
@json_option
@click.pass_obj
def retention_cmd(obj: Context, days: int | None, apply: bool, as_json: bool) -> None:
    """Anonymise retired memories older than N days: text becomes [REDACTED]."""
    report = obj.vault().admin.retention(days, apply=apply)

    def human() -> None:
        if not report.memories:
            click.echo(f"no retired memories older than {report.days} days")
            return
        verb = "redacted" if report.applied else "would redact"
        for m in report.memories:
            click.echo(f"{verb} {m.id} ({m.status}, {m.path}:{m.line}): {m.text[:60]}")
        if not report.applied:
            click.echo("dry run: pass --apply to redact them", err=True)

    emit(report, as_json, human)


@admin_group.command("migrate")
@click.option("--yes", is_flag=True, help="Write the migration (default: show its diff only).")
@json_option
@click.pass_obj
def migrate_cmd(obj: Context, yes: bool, as_json: bool) -> None:
    """Move an older vault to the line format: fields beside the lines (one commit)."""
    done = obj.vault().admin.migrate(apply=yes)

    def human() -> None:
        if done.nothing_to_do:
            click.echo("nothing to migrate: the vault is in the line format")
            return
        if not done.applied:
            click.echo(done.diff, nl=False)
        verb = "migrated" if done.applied else "would migrate"
        click.echo(
            f"{verb} {done.memories} memories in {len(done.files)} files "
            f"({done.archived} retired lines to archives, {done.transcripts} sessions "
            "as transcripts)"
        )
        if done.applied and done.commit:
            click.echo(f"committed {done.commit[:10]} (undo: git revert {done.commit[:10]})")
        elif not done.applied:
            click.echo("dry run: pass --yes to write it as one commit", err=True)

    emit(done, as_json, human)


@admin_group.command("config")
@click.option("--show", is_flag=True, help="List every setting (the default action).")
@json_option
@click.pass_obj
def config_cmd(obj: Context, show: bool, as_json: bool) -> None:
    """Every setting, its value, and where it came from (default, mdmem.toml, env...)."""
    settings = obj.vault().settings
    rows = [
        {"setting": key, "value": value, "source": settings.sources.get(key, "default")}
        for key, value in setting_values(settings).items()
    ]
    ignored = [{"setting": key, "why": why} for key, why in sorted(settings.ignored.items())]

    def human() -> None:
        width = max(len(r["setting"]) for r in rows)
        for r in rows:
            click.echo(f"{r['setting']:<{width}}  {r['value']!r:<30}  {r['source']}")
        for item in ignored:
            click.echo(f"not applied: {item['setting']}: {item['why']}")

    emit({"settings": rows, "ignored": ignored}, as_json, human)


@admin_group.command("trust")
@click.option("--revoke", is_flag=True, help="Stop trusting this vault's mdmem.toml.")
@json_option
@click.pass_obj
def trust_cmd(obj: Context, revoke: bool, as_json: bool) -> None:
    """Let this vault's mdmem.toml set endpoints, key variables, model and state dir.

    Trust covers exactly the values it holds now; when a pull or an edit
    changes any of them, mdmem ignores them again until you re-run this.
    """
    root = obj.root()
    trusted = trust_vault(root, revoke=revoke)

    def human() -> None:
        if revoke:
            click.echo(f"mdmem.toml of {root} is no longer trusted")
        elif not trusted:
            click.echo(
                "mdmem.toml sets no endpoint, key variable, model or state dir: nothing to trust"
            )
        else:
            for key, value in trusted.items():
                click.echo(f"trusted {key} = {value!r}")

    emit({"root": str(root), "revoked": revoke, "trusted": trusted}, as_json, human)


# ------------------------------------------------------------------ recall ----


@admin_group.command("providers")
@json_option
def providers_cmd(as_json: bool) -> None:
    """Installed providers by kind: mdmem's own, then those packages register
    (entry point groups mdmem.embedders, mdmem.llms, mdmem.rerankers)."""
    from mdmem.providers import registry  # reads entry points: only for this command

    found = {kind: registry.available(kind) for kind in registry.GROUPS}

    def human() -> None:
        for kind, names in found.items():
            click.echo(f"{kind} ({registry.GROUPS[kind]}): {', '.join(names) or 'none'}")

    emit(found, as_json, human)
