"""Recall-control options shared by ``mdmem recall`` and ``mdmem context`` (see
:mod:`mdmem.recall.controls`): ``--exclude-id``, ``--source``, ``--contact``,
``--session``, ``--author``, ``--status``, ``--scope-weight SCOPE=W``,
``--no-fallback``, and ``--tier``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from mdmem.models import STATUSES

__all__ = ["CONTROL_KEYS", "control_options", "controls_of"]

F = TypeVar("F", bound=Callable[..., Any])

CONTROL_KEYS = (
    "exclude_ids",
    "source",
    "contact",
    "session",
    "author",
    "status",
    "scope_weights",
    "fallback",
    "tier",
)


def control_options(func: F) -> F:
    for option in reversed(
        [
            click.option(
                "--exclude-id", "exclude_ids", multiple=True, help="Leave out (repeatable)."
            ),
            click.option("--source", multiple=True, help="Only this [source:: …] (repeatable)."),
            click.option("--contact", multiple=True, help="Only this contact (repeatable)."),
            click.option("--session", multiple=True, help="Only this session (repeatable)."),
            click.option(
                "--author", multiple=True, help="[author::]/[speaker::] value, or 'human'."
            ),
            click.option("--status", multiple=True, type=click.Choice(STATUSES)),
            click.option(
                "--scope-weight",
                "scope_weights",
                multiple=True,
                metavar="SCOPE=W",
                help="Weigh a scope's hits (0 leaves it out; repeatable).",
            ),
            click.option(
                "--tier",
                type=click.IntRange(0, 2),
                default=2,
                show_default=True,
                help="0 one-line abstracts, 1 overviews, 2 full text.",
            ),
            click.option(
                "--no-fallback",
                "fallback",
                is_flag=True,
                flag_value=False,
                default=True,
                help="No substring scan when keywords find nothing.",
            ),
        ]
    ):
        func = option(func)
    return func


def controls_of(options: dict[str, Any]) -> dict[str, Any]:
    """Pop the control options out of ``options``; the vault.recall keywords they give."""
    out: dict[str, Any] = {}
    for key in CONTROL_KEYS:
        value = options.pop(key, None)
        if key == "fallback":
            if value is False:
                out[key] = False
        elif key == "tier":
            if value is not None and value != 2:
                out[key] = value
        elif key == "scope_weights":
            if value:
                out[key] = _weights(value)
        elif value:
            out[key] = list(value)
    return out


def _weights(pairs: tuple[str, ...]) -> dict[str, float]:
    weights: dict[str, float] = {}
    for pair in pairs:
        scope, sep, number = pair.rpartition("=")
        try:
            weights[scope.strip()] = float(number)
        except ValueError:
            sep = ""
        if not sep or not scope.strip():
            raise click.BadParameter(f"{pair!r}: expected SCOPE=WEIGHT, e.g. root=0.5")
    return weights
