"""A real MCP client over stdio against ``mdmem serve`` (shared by the MCP tests)."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import anyio

from mdmem import Vault

Arguments = dict[str, Any] | Callable[[dict[str, Any]], dict[str, Any]]


def server_params(vault: Vault, *scopes: str, cwd: Path | None = None) -> Any:
    """How a host starts mdmem's MCP server on ``vault``, confined to ``scopes``
    (in the folder ``cwd``, as a host starts it in the project it works on)."""
    from mcp.client.stdio import StdioServerParameters

    env = {
        "MDMEM_STATE_DIR": os.environ["MDMEM_STATE_DIR"],
        "MDMEM_EMBEDDER_PROVIDER": "hash",
        "PYTHONPATH": str(Path(__file__).resolve().parents[1]),
    }
    if os.environ.get("MDMEM_CONFIG_HOME"):  # the test's own config: trust records included
        env["MDMEM_CONFIG_HOME"] = os.environ["MDMEM_CONFIG_HOME"]
    args = ["-m", "mdmem.cli.serve", "serve", "--vault", str(vault.root)]
    for scope in scopes:
        args += ["--scope", scope]
    return StdioServerParameters(command=sys.executable, args=args, env=env, cwd=cwd)


def mcp_session(
    vault: Vault,
    calls: Sequence[tuple[str, str, Arguments]],
    *scopes: str,
    cwd: Path | None = None,
) -> dict[str, Any]:
    """Run ``calls`` ((label, tool, arguments)) in one client session.

    Returns the listed tools by name under ``"tools"`` and each call's result
    under its label; ``arguments`` may be a function of the results so far.
    """
    from mcp import ClientSession
    from mcp.client.stdio import stdio_client

    seen: dict[str, Any] = {}

    async def run() -> None:
        with open(os.devnull, "w") as errlog:
            async with (
                stdio_client(server_params(vault, *scopes, cwd=cwd), errlog=errlog) as (
                    read,
                    write,
                ),
                ClientSession(read, write) as client,
            ):
                await client.initialize()
                seen["tools"] = {t.name: t for t in (await client.list_tools()).tools}
                for label, tool, arguments in calls:
                    if callable(arguments):
                        arguments = arguments(seen)
                    seen[label] = await client.call_tool(tool, arguments)

    anyio.run(run)
    return seen
