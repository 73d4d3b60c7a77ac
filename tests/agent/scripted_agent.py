"""Shared pieces of the scripted agent runs (issue 18's "How it will be checked").

A repository whose test fails until a file is edited, the host tools the
scripted model calls on it, a long manual to ingest, and a helper for a
scripted tool-call reply. Used by test_session_run, test_scripted_run_documents_contacts
and test_seeds_agent_run so the scenarios stay one story.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from mdmem.testing import Reply

#: The host's own tools (run by the host, not by mdmem), as OpenAI function schemas.
HOST_TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": name,
            "description": name,
            "parameters": {"type": "object", "properties": props, "required": list(props)},
        },
    }
    for name, props in (
        ("Bash", {"command": {"type": "string"}}),
        ("Edit", {"file_path": {"type": "string"}, "new_string": {"type": "string"}}),
    )
]

TOPICS = [
    "unpacking",
    "mounting",
    "wiring",
    "calibration",
    "pressure tests",
    "valves",
    "filters",
    "pumps",
    "seals",
    "alarms",
    "logging",
    "storage",
    "transport",
    "disposal",
]


def tool_call(n: int, name: str, **args: Any) -> Reply:
    """A model reply that calls one tool."""
    return Reply(
        tool_calls=[
            {
                "id": f"call_{n}",
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(args)},
            }
        ]
    )


class Repo:
    """A repository whose test fails until src/app.py is edited."""

    def __init__(self) -> None:
        self.fixed = False

    def run(self, name: str, args: dict[str, str]) -> tuple[str, int]:
        if name == "Edit":
            self.fixed = self.fixed or args["file_path"].endswith("src/app.py")
            return f"edited {args['file_path']}", 0
        if args["command"] == "pytest" and not self.fixed:
            return (
                "collected 1 item\n"
                'E     File "src/app.py", line 3, in total\n'
                "E   TypeError: unsupported operand type(s) for +: 'int' and 'str'\n"
                "FAILED tests/test_app.py::test_total",
                1,
            )
        return "1 passed in 0.01s", 0


def long_manual(path: Path) -> Path:
    """A manual of len(TOPICS) sections (> 8 KB); only "Valves" holds the wombat torque."""
    sections = []
    for n, topic in enumerate(TOPICS, 1):
        body = " ".join(
            f"Step {k} of {topic}: follow the checklist for unit {n}." for k in range(12)
        )
        if topic == "valves":
            body += " Tighten the wombat valve to exactly 40 Nm; never exceed 45 Nm."
        sections.append(f"## {n}. {topic.title()}\n\n{body}\n")
    path.write_text("# Pump station manual\n\nRead this first.\n\n" + "\n".join(sections))
    return path
