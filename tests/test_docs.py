"""The documents a person reads tell the truth about the code (after sqlite-utils' test_docs).

Every command and group of ``mdmem`` is in docs/cli.md, every public name of
the Vault and of each desk in docs/api.md (in its desk's section), every
setting and environment variable in docs/configuration.md; every ``mdmem …``
command line in README.md and docs/ names a command that exists under its
0.1.0 name; every relative link lands on a file and a heading that exist;
the README's Python is valid, and the numbers it quotes are the code's.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterator
from pathlib import Path

import click
import pytest

from mdmem import Vault
from mdmem.agent.prompt import PromptBudgets
from mdmem.cli import main
from mdmem.cli.context import MOVED_COMMANDS
from mdmem.config import Settings, setting_values
from mdmem.deprecations import MOVED
from mdmem.hookkit import hosts as hostformats
from mdmem.mcp import server as mcp_server
from mdmem.mcp import tools

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
README = ROOT / "README.md"
PAGES = [README, ROOT / "CHANGELOG.md", *sorted(DOCS.glob("*.md"))]
README_MAX_LINES = 450  # a guide a person reads, not the reference (that is docs/)

_FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)
_CODE_SPAN = re.compile(r"`([^`]+)`")  # a span may wrap onto the next line
_LINK = re.compile(r"\]\(([^)\s]+)\)")
_HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$", re.M)


def text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def fences(markdown: str, lang: str | None = None) -> list[str]:
    return [body for tag, body in _FENCE.findall(markdown) if lang is None or tag == lang]


def section(markdown: str, heading: str) -> str:
    """The text under the first heading that is exactly ``heading``, to the next one as high."""
    match = re.search(rf"^(#+) {re.escape(heading)}\s*$", markdown, re.M)
    assert match, f"no heading {heading!r}"
    level = len(match.group(1))
    rest = markdown[match.end() :]
    end = re.search(rf"^#{{1,{level}}} ", rest, re.M)
    return rest[: end.start()] if end else rest


def spans(markdown: str) -> list[str]:
    """The inline code spans, outside fenced blocks."""
    return _CODE_SPAN.findall(_FENCE.sub("", markdown))


def identifiers_in_code(markdown: str) -> set[str]:
    """Every identifier written inside code: inline spans and fenced blocks."""
    code = " ".join(spans(markdown)) + " ".join(fences(markdown))
    return set(re.findall(r"[A-Za-z_]\w*", code))


def commands() -> Iterator[tuple[str, click.Command]]:
    def walk(cmd: click.Command, path: list[str]) -> Iterator[tuple[str, click.Command]]:
        if path:
            yield " ".join(path), cmd
        if isinstance(cmd, click.Group):
            for name, sub in sorted(cmd.commands.items()):
                yield from walk(sub, [*path, name])

    yield from walk(main, [])


COMMANDS = dict(commands())


# ------------------------------------------------------------------- the CLI --


@pytest.mark.parametrize("path", sorted(COMMANDS))
def test_every_command_and_group_is_in_cli_md(path: str) -> None:
    assert re.search(rf"mdmem {re.escape(path)}(?![\w-])", text(DOCS / "cli.md")), (
        f"`mdmem {path}` is not documented in docs/cli.md"
    )


@pytest.mark.parametrize("path", sorted(COMMANDS))
def test_every_command_has_help(path: str) -> None:
    assert (COMMANDS[path].help or "").strip(), f"mdmem {path} has no help text"


def test_every_old_command_name_is_mapped_in_cli_md() -> None:
    table = section(text(DOCS / "cli.md"), "Old command names")
    for old, (group, sub) in MOVED_COMMANDS.items():
        assert f"| `mdmem {old}` | `mdmem {group} {sub}` |" in table, old


def _check_command_line(words: list[str]) -> str | None:
    """Why ``mdmem <words>`` is not a command line of 0.1.0, or None when it is."""
    i = 0
    while i < len(words) and words[i].startswith("-"):
        if words[i] == "--":
            return None  # `claude mcp add mdmem -- mdmem serve`: the name, then another line
        i += 2 if words[i] in ("--vault", "--agent") else 1
    if i >= len(words) or not re.fullmatch(r"[a-z][a-z-]*", words[i]):
        return None  # `mdmem --help`, `mdmem COMMAND --help`: no command named
    group: click.Command = main
    while i < len(words) and isinstance(group, click.Group):
        word = words[i]
        if not re.fullmatch(r"[a-z][a-z|-]*", word):
            return None  # a placeholder (EVENT, HOST) or an option follows
        for alternative in word.split("|"):
            if alternative not in group.commands:
                where = "mdmem" if group is main else f"mdmem {group.name}"
                return f"{where} has no command {alternative!r}"
        group = group.commands[word.split("|")[0]]
        i += 1
    return None


_SHELL = ("", "sh", "bash", "console")


def command_lines(markdown: str) -> Iterator[list[str]]:
    """The words after each `mdmem` of the shell code: fenced blocks and inline spans."""
    shell = [body for tag, body in _FENCE.findall(markdown) if tag in _SHELL]
    for chunk in [*shell, *spans(markdown)]:
        for line in chunk.splitlines():
            # Not `from mdmem import …`, `mdmem.toml` or a path ending in mdmem.
            for match in re.finditer(r"(?<![\w./\"'-])(?<!from )mdmem(?= )", line):
                rest = line[match.end() :].split(" #")[0]
                yield rest.split()


@pytest.mark.parametrize("page", [README, *sorted(DOCS.glob("*.md"))], ids=lambda p: p.name)
def test_command_lines_name_commands_that_exist(page: Path) -> None:
    markdown = text(page)
    # The two tables that name the old commands on purpose.
    if page.name == "cli.md":
        markdown = markdown.replace(section(markdown, "Old command names"), "")
    if page.name == "upgrading.md":
        markdown = markdown.replace(section(markdown, "Command names"), "")
    wrong = []
    for words in command_lines(markdown):
        why = _check_command_line(words)
        if why:
            wrong.append(f"`mdmem {' '.join(words)}`: {why}")
    assert not wrong, "\n".join(wrong)


# ---------------------------------------------------------------- the API --


def public(obj: object) -> set[str]:
    return {n for n in dir(obj) if not n.startswith("_")}


def verbs(obj: object) -> set[str]:
    """The public methods and properties of ``obj``'s class (not its plain attributes)."""
    return public(type(obj))


def test_every_public_name_of_the_vault_is_in_api_md(vault: Vault) -> None:
    # The vault's own part of the page: everything before the first desk's section.
    head = text(DOCS / "api.md").split("\n## `vault.sessions`")[0]
    missing = sorted(public(vault) - identifiers_in_code(head))
    assert not missing, f"Vault names not in docs/api.md: {missing}"


DESKS = ["sessions", "git", "admin", "library", "contacts", "usefulness"]


@pytest.mark.parametrize("desk", DESKS)
def test_every_public_name_of_each_desk_is_in_its_section(vault: Vault, desk: str) -> None:
    documented = identifiers_in_code(section(text(DOCS / "api.md"), f"`vault.{desk}`"))
    names = public(getattr(vault, desk))
    if desk == "sessions":  # what the desk hands out is documented beside it
        session = vault.sessions.open("docs-check")
        names |= verbs(session) | verbs(vault.sessions.pending)
        names |= verbs(vault.sessions.action("docs-check"))
    missing = sorted(names - documented)
    assert not missing, f"vault.{desk}: not in its section of docs/api.md: {missing}"


def test_every_exported_name_is_in_api_md() -> None:
    import mdmem

    documented = identifiers_in_code(text(DOCS / "api.md"))
    missing = sorted(n for n in mdmem.__all__ if not n.startswith("__") and n not in documented)
    assert not missing, f"exported from mdmem but not in docs/api.md: {missing}"


def test_every_moved_name_is_in_the_table() -> None:
    table = section(text(DOCS / "api.md"), "Names that moved in 0.1.0")
    rows = re.findall(r"^\| `([a-z_]+)", table, re.M)
    missing = sorted(set(MOVED) - set(rows))
    assert not missing, f"moved names without a row in docs/api.md: {missing}"


def test_every_moved_module_is_in_the_table() -> None:
    from tests.test_public_api import OLD_PATHS

    table = section(text(DOCS / "api.md"), "Names that moved in 0.1.0")
    for old, new in OLD_PATHS.items():
        assert f"| `{old}` | `{new}` |" in table, old


def test_prompt_budgets_quoted_are_the_defaults() -> None:
    heading = "`prompt_context`: everything an agent should see before a step"
    quoted = dict(re.findall(r"`(\w+)=(\d+)`", section(text(DOCS / "api.md"), heading)))
    defaults = {k: getattr(PromptBudgets(), k) for k in quoted}
    assert quoted and {k: int(v) for k, v in quoted.items()} == defaults


# --------------------------------------------------------- configuration --


def _toml(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value)
    return str(value)


def test_every_setting_is_in_configuration_md_with_its_default() -> None:
    page = text(DOCS / "configuration.md")
    for dotted, default in setting_values(Settings()).items():
        section_name, _, key = dotted.rpartition(".")
        where = section(page, f"`[{section_name}]`") if section_name else section(page, "Top level")
        assert f"`{key}`" in where, f"{dotted} is not in docs/configuration.md"
        row = re.search(rf"^\| `{key}` \| `([^`]*)` \|", where, re.M)
        if row:  # rows naming two settings at once are checked by name only
            assert row.group(1) == _toml(default), f"{dotted}: documented {row.group(1)}"


# Read by mdmem but not for a person to set: a hook's canary run, git's message file.
_INTERNAL_VARIABLES = {"MDMEM_HOOK_PROBE", "MDMEM_COMMIT_MSG"}


def test_every_environment_variable_mdmem_reads_is_in_configuration_md() -> None:
    found: set[str] = set()
    for source in (ROOT / "mdmem").rglob("*.py"):
        found |= set(re.findall(r"[\"'](MDMEM_[A-Z_]+)[\"']", text(source)))
    page = text(DOCS / "configuration.md")
    missing = sorted(v for v in found - _INTERNAL_VARIABLES if v not in page)
    assert not missing, f"environment variables not in docs/configuration.md: {missing}"


# ------------------------------------------------------------------ hooks --


def test_every_host_event_is_in_hooks_md() -> None:
    page = text(DOCS / "hooks.md")
    for event in hostformats.EVENTS:
        assert f"`{event}`" in page, event
    for name, host in hostformats.HOSTS.items():
        assert f"hooks install {name}" in page, name
        for native in host.events.values():
            assert re.search(rf"\b{native}\b", page), f"{name}: {native}"


# ------------------------------------------------------------------ README --


def test_readme_is_a_guide_not_a_reference() -> None:
    assert len(text(README).splitlines()) <= README_MAX_LINES


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_python_blocks_are_valid(page: Path) -> None:
    for block in fences(text(page), "python"):
        ast.parse(block)


def test_readme_numbers_are_the_codes() -> None:
    readme = text(README)
    assert re.search(rf"same tools \({len(mcp_server.MCP_TOOLS)} of them\)", readme)
    listed = re.search(r"# (recall(?:, \w+)+)\n", readme)
    assert listed and tuple(listed.group(1).split(", ")) == tools.DEFAULT_TOOLS
    threshold = Settings().consolidation.threshold
    assert re.search(rf"more than {threshold}\s+entries are\s+waiting", readme)
    assert f"with {len(mcp_server.MCP_TOOLS)} tools" in text(ROOT / "CHANGELOG.md")
    api = text(DOCS / "api.md")
    assert f"`ALL_TOOLS` has all {len(tools.ALL_TOOLS)}" in api
    assert re.search(rf"all {len(mcp_server.MCP_TOOLS)}\s+tools", api)


def test_the_quoted_size_of_the_mcp_tool_list_holds(vault: Vault) -> None:
    """What a client puts in the model's context, as bench/mcp_tools.py counts it."""
    from mcp import types

    toolset = tools.Toolset(vault, tools=mcp_server.MCP_TOOLS)
    listed = []
    for name in mcp_server.MCP_TOOLS:
        description, schema = toolset.describe(name)
        annotations = mcp_server.tool_annotations(types, toolset.hints(name))
        listed.append(
            {
                "name": name,
                "description": description,
                "inputSchema": schema,
                "annotations": annotations.model_dump(by_alias=True, exclude_none=True),
            }
        )
    tokens = -(-len(json.dumps(listed, ensure_ascii=False)) // 4)
    quoted = re.search(r"about\s+([\d,]+)\s+tokens", text(DOCS / "api.md"))
    assert quoted, "docs/api.md no longer quotes the tool list's size"
    assert abs(int(quoted.group(1).replace(",", "")) - tokens) <= 0.05 * tokens, tokens


# ------------------------------------------------------------------ links --


def slug(heading: str) -> str:
    """GitHub's anchor for a heading."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def headings(page: Path) -> set[str]:
    return {slug(h) for h in _HEADING.findall(text(page))}


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_relative_links_land(page: Path) -> None:
    broken = []
    for target in _LINK.findall(text(page)):
        if re.match(r"[a-z]+:", target):
            continue  # https:, mailto:
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        lands = dest.exists() and (not anchor or dest.suffix != ".md" or anchor in headings(dest))
        if not lands:
            broken.append(target)
    assert not broken, f"{page.name}: links that land nowhere: {broken}"


def _keys(value: object, prefix: str = "") -> set[str]:
    """Every key path of a JSON value (``tool_input.command``), lists by their items."""
    if isinstance(value, dict):
        out: set[str] = set()
        for key, sub in value.items():
            out |= {f"{prefix}{key}"} | _keys(sub, f"{prefix}{key}.")
        return out
    if isinstance(value, list):
        return set().union(*(_keys(item, prefix) for item in value)) if value else set()
    return set()


def test_hooks_md_shows_a_recorded_payload_for_every_event() -> None:
    """docs/hooks.md's payloads are the recorded fixtures: every event of the hook kit,
    JSON that parses, with the fixture's keys (and values) exactly."""
    page = section(text(DOCS / "hooks.md"), "Recorded payloads")
    shown = re.findall(r"^`([a-z-]+)`:\n\n```json\n(.*?)^```", page, re.S | re.M)
    events = [event for event, _ in shown]
    assert len(events) == len(set(events)) and set(events) == set(hostformats.EVENTS)
    fixtures = ROOT / "tests" / "hookkit" / "data" / "hooks"
    for event, body in shown:
        payload = json.loads(body)
        recorded = json.loads(text(fixtures / f"claude-code.{event}.json"))
        assert _keys(payload) == _keys(recorded), event
        assert payload == recorded, event
