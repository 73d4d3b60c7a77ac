"""Every command line mdmem shows a person names a command that exists today:
help texts (the whole click tree), every message and docstring in ``mdmem/``,
and the docs. An old name (``CLI_ALIASES``) still runs, with a warning; what
we print must not teach it."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import click
import pytest

from mdmem.cli import main
from mdmem.cli.context import CLI_ALIASES

ROOT = Path(__file__).resolve().parents[2]
# `mdmem WORDS` in backticks, or opening a parenthesis or a quotation.
_COMMAND_LINE = re.compile(r"(?:`|\(|'|\")mdmem ([^`)'\"]*)")
_WORD = re.compile(r"[a-z][a-z0-9-]*\Z")
# Bytes already written into people's vaults (.gitattributes comments, matched
# to be repaired): changing them would orphan what vaults hold.
_WRITTEN_INTO_VAULTS = {"mdmem/store/gitattributes.py"}


def _tree(
    command: click.Command, path: tuple[str, ...] = ()
) -> dict[tuple[str, ...], click.Command]:
    found = {path: command}
    if isinstance(command, click.Group):
        for name, sub in command.commands.items():
            found.update(_tree(sub, (*path, name)))
    return found


COMMANDS = _tree(main)


def stale(text: str) -> list[str]:
    """The command lines in ``text`` that name no current command."""
    bad = []
    for match in _COMMAND_LINE.finditer(text):
        path: tuple[str, ...] = ()
        for word in match.group(1).split():
            if not _WORD.match(word):
                break  # an option, a placeholder (PATH, <id>) or an argument
            if (*path, word) not in COMMANDS:
                bad.append(f"mdmem {' '.join((*path, word))}")
                break
            path = (*path, word)
            if not isinstance(COMMANDS[path], click.Group):
                break
    return bad


def _help_texts() -> Iterator[tuple[str, str]]:
    for path, command in COMMANDS.items():
        where = " ".join(("mdmem", *path))
        for text in (command.help, command.short_help, command.epilog):
            if text:
                yield where, text
        for param in command.params:
            text = getattr(param, "help", None)
            if text:
                yield f"{where} {param.opts[0]}", text


def _strings() -> Iterator[tuple[str, str]]:
    for path in sorted((ROOT / "mdmem").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel in _WRITTEN_INTO_VAULTS:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                yield f"{rel}:{node.lineno}", node.value


def _doc_lines() -> Iterator[tuple[str, str]]:
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            # A row of the alias tables names the old command beside its new one.
            if any(a.old in line and a.new in line for a in CLI_ALIASES.values()):
                continue
            yield f"{path.relative_to(ROOT).as_posix()}:{n}", line


def test_the_check_catches_old_and_unknown_names() -> None:
    assert stale("run `mdmem import --restore FILE`") == ["mdmem import"]
    assert stale("see (mdmem review)") == ["mdmem review"]
    assert stale("`mdmem library bogus`") == ["mdmem library bogus"]
    assert stale("`mdmem library import --restore FILE` and `mdmem init PATH`") == []
    assert set(CLI_ALIASES) <= {p[0] for p in COMMANDS if p} | set(CLI_ALIASES)
    assert all((old,) not in COMMANDS for old in CLI_ALIASES)  # old names are aliases only


@pytest.mark.parametrize(
    "source", [_help_texts, _strings, _doc_lines], ids=["help", "messages", "docs"]
)
def test_only_current_command_names_are_shown(source) -> None:  # type: ignore[no-untyped-def]
    found = [f"{where}: {name}" for where, text in source() for name in stale(text)]
    assert found == [], "\n".join(found)


def test_every_old_name_still_runs_and_says_its_new_one() -> None:
    from click.testing import CliRunner

    result = CliRunner().invoke(main, ["export", "--help"])
    assert result.exit_code == 0
    assert "mdmem library export" in result.output
