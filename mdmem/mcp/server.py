"""The mdmem MCP server: a vault's memory for Claude Code, Cursor and other MCP clients.

Built on the official ``mcp`` SDK (2.x, low-level ``Server``). The tools are
the :class:`~mdmem.mcp.tools.Toolset` (same JSON schemas, same validation, same
scope rules): ``recall``, ``remember``, ``forget``, ``reflect``, ``get``,
``history``, ``context``, ``read_tool_output`` (recall hands out its keys),
``archive``, ``unarchive``, each
with the spec's annotations (``readOnlyHint``, ``destructiveHint``,
``idempotentHint``) so a client knows which calls to confirm. The resources
are the core files of each allowed scope — USER.md, MEMORY.md, LEARNING.md and
today's daily log — as
``mdmem://vault/<vault-relative path>`` (``mdmem://vault/daily/today`` always
means today's log).

The vault and the allowed scopes are fixed when the server starts (``mdmem
serve --vault PATH --scope S``); nothing a client or model sends can change
them. ``recall`` and ``context`` add the team memory of the code checkout the
server started in (``--repo`` names another), or of one the model names in
their ``repo`` argument, only once the person trusted that checkout (``mdmem
team trust``); the team tier is read from the working tree and never written.
Transport: stdio by default (:mod:`mdmem.mcp.stdio`, which answers
every malformed line with a JSON-RPC error); streamable HTTP bound to
127.0.0.1 only and behind the user's bearer token, or on a private unix
socket (:mod:`mdmem.mcp.http`). On stdio, stdout is the protocol: logs
go to stderr.
"""

from __future__ import annotations

import importlib.metadata
import json
import logging
import os
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mdmem.errors import InvalidInputError, MdmemError, ScopeDeniedError
from mdmem.files.blocks import scope_dir
from mdmem.mcp.stdio import stdio_transport
from mdmem.mcp.tools import Toolset, scope_label

if TYPE_CHECKING:
    from mdmem.vault import Vault

__all__ = [
    "MCP_TOOLS",
    "SERVER_NAME",
    "build_server",
    "core_resources",
    "read_resource_text",
    "run",
    "tool_annotations",
]

log = logging.getLogger("mdmem.mcp")

SERVER_NAME = "mdmem"
MCP_TOOLS: tuple[str, ...] = (
    "recall",
    "remember",
    "forget",
    "reflect",
    "get",
    "history",
    "context",
    "contact_profile",
    "changes",
    "read_tool_output",
    "archive",
    "unarchive",
)
URI_PREFIX = "mdmem://vault/"
_CORE_FILES = ("USER.md", "MEMORY.md", "LEARNING.md")
_DAILY = re.compile(r"daily/(\d{4}-\d{2}-\d{2})\.md")  # fullmatch: "$" passes a final newline

_INSTRUCTIONS = """Long-term memory for this user and project, kept as markdown files under git.
Call `recall` before answering questions that may depend on earlier sessions; call `remember`
to store durable facts, preferences and decisions (one statement per call). Results cite the
file and line each memory lives in."""


def _require_mcp() -> Any:
    try:
        import mcp.types as types
        from mcp.server.lowlevel import Server
    except ImportError:
        raise InvalidInputError(
            "the MCP server needs the mcp package (2.x): pip install 'mcp>=2'"
        ) from None
    return types, Server


def _resource_scopes(toolset: Toolset) -> list[str]:
    # A host that allows everything gets the root's files; scoped files are
    # listed for the scopes the host named.
    return [""] if toolset.allowed is None else list(toolset.allowed)


def core_resources(vault: Vault, toolset: Toolset) -> list[dict[str, str]]:
    """The resources a client may read: name, uri, relative path, description."""
    today = vault.admin.clock.today()
    out: list[dict[str, str]] = []
    for scope in _resource_scopes(toolset):
        base = scope_dir(scope)
        label = scope_label(scope)
        for filename in (*_CORE_FILES, f"daily/{today}.md"):
            rel = str(base / filename)
            title = "today's daily log" if filename.startswith("daily/") else filename
            out.append(
                {
                    "name": f"{label}/{filename}",
                    "uri": URI_PREFIX + rel,
                    "path": rel,
                    "description": f"{title} ({label} scope)",
                }
            )
    return out


def _resolve_uri(vault: Vault, toolset: Toolset, uri: str) -> str:
    """The vault-relative path a resource URI names, if it is one ``toolset`` allows."""
    if not uri.startswith(URI_PREFIX):
        raise InvalidInputError(f"unknown resource {uri!r}; mdmem serves {URI_PREFIX}…")
    rel = uri[len(URI_PREFIX) :].strip("/")
    parts = rel.split("/")
    scope = ""
    inner = rel
    if parts[0] == "scopes" and len(parts) >= 4:
        scope = f"{parts[1]}:{parts[2]}"
        inner = "/".join(parts[3:])
    if inner in ("daily/today", "daily/today.md"):
        inner = f"daily/{vault.admin.clock.today()}.md"
    if inner not in _CORE_FILES and not _DAILY.fullmatch(inner):
        raise InvalidInputError(f"{uri!r} is not a core memory file")
    if scope not in _resource_scopes(toolset):
        raise ScopeDeniedError(f"{uri!r} is outside the scopes this server allows")
    return str(scope_dir(scope) / inner)


def read_resource_text(vault: Vault, toolset: Toolset, uri: str) -> str:
    """The text of the resource ``uri`` names ("" for a file not written yet).

    InvalidInputError for anything but a core file or daily log under
    :data:`URI_PREFIX`; ScopeDeniedError for a scope ``toolset`` does not allow.
    """
    return toolset.reading.file_text(_resolve_uri(vault, toolset, uri))


def build_server(
    vault: Vault,
    allowed_scopes: Iterable[str] | None = None,
    default_scope: str | None = None,
    *,
    repo: str | os.PathLike[str] | None = None,
) -> Any:
    """A low-level ``mcp`` Server exposing ``vault`` through a Toolset; ``repo``:
    the code checkout whose team memory recall and context add once trusted."""
    import anyio

    types, server_cls = _require_mcp()
    toolset = Toolset(vault, allowed_scopes, default_scope, tools=MCP_TOOLS, repo=repo)
    # One vault call at a time: the vault is thread-safe, but serialising keeps
    # a burst of calls from queueing many threads on its lock.
    limiter = anyio.CapacityLimiter(1)

    tool_list = []
    for name in MCP_TOOLS:
        description, params = toolset.describe(name)  # names the allowed scopes
        tool_list.append(
            types.Tool(
                name=name,
                description=description,
                input_schema=params,
                annotations=tool_annotations(types, toolset.hints(name)),
            )
        )

    async def list_tools(ctx: Any, params: Any) -> Any:
        return types.ListToolsResult(tools=tool_list)

    async def call_tool(ctx: Any, params: Any) -> Any:
        name = params.name
        arguments = dict(params.arguments or {})
        result = await anyio.to_thread.run_sync(
            lambda: toolset.dispatch(name, arguments), limiter=limiter
        )
        is_error = "error" in result
        if is_error:
            log.info("tool %s refused: %s", name, result["error"].get("type"))
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=json.dumps(result, ensure_ascii=False))],
            structured_content=result,
            is_error=is_error,
        )

    async def list_resources(ctx: Any, params: Any) -> Any:
        return types.ListResourcesResult(
            resources=[
                types.Resource(
                    name=r["name"],
                    uri=r["uri"],
                    description=r["description"],
                    mime_type="text/markdown",
                )
                for r in core_resources(vault, toolset)
            ]
        )

    async def read_resource(ctx: Any, params: Any) -> Any:
        uri = str(params.uri)
        try:
            text = await anyio.to_thread.run_sync(
                lambda: read_resource_text(vault, toolset, uri), limiter=limiter
            )
        except MdmemError as exc:
            from mcp.shared.exceptions import MCPError

            raise MCPError(code=-32002, message=str(exc)) from None
        return types.ReadResourceResult(
            contents=[types.TextResourceContents(uri=uri, text=text, mime_type="text/markdown")]
        )

    return server_cls(
        SERVER_NAME,
        version=_version(),
        instructions=_INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_read_resource=read_resource,
    )


def tool_annotations(types: Any, hints: dict[str, bool]) -> Any:
    """``ToolAnnotations`` from the Toolset's camelCase hints."""
    names = {
        "readOnlyHint": "read_only_hint",
        "destructiveHint": "destructive_hint",
        "idempotentHint": "idempotent_hint",
        "openWorldHint": "open_world_hint",
    }
    return types.ToolAnnotations(**{names[k]: v for k, v in hints.items()})


def _version() -> str:
    # From the installed metadata, not `mdmem.__version__`: importing the
    # package root here would load the Vault facade into the agent layer.
    try:
        return importlib.metadata.version("mdmem")
    except importlib.metadata.PackageNotFoundError:
        return "0+unknown"


def run(
    vault: Vault,
    allowed_scopes: Sequence[str] | None = None,
    default_scope: str | None = None,
    *,
    http: bool = False,
    port: int = 8765,
    unix_socket: Path | None = None,
    token: str | None = None,
    repo: str | os.PathLike[str] | None = None,
) -> None:
    """Serve ``vault`` until the client disconnects (stdio) or Ctrl-C (HTTP).

    HTTP: on 127.0.0.1:``port`` for requests bearing ``token``, or on
    ``unix_socket`` for this user only (see :mod:`mdmem.mcp.http`). ``repo``:
    see :func:`build_server`.
    """
    import anyio

    server = build_server(vault, allowed_scopes, default_scope, repo=repo)
    if http or unix_socket is not None:
        from mcp.server.transport_security import TransportSecuritySettings

        from mdmem.mcp.http import serve_http

        # The SDK's DNS-rebinding guard: only a Host of 127.0.0.1 or localhost (on a
        # unix socket the URL has no port, and no browser page reaches it anyway).
        names = ["127.0.0.1", "localhost"]
        guard = TransportSecuritySettings(
            allowed_hosts=[h + p for h in names for p in ("", ":*")],
            allowed_origins=[f"http://{h}{p}" for h in names for p in ("", ":*")],
        )
        app = server.streamable_http_app(
            host="127.0.0.1", transport_security=guard if unix_socket is not None else None
        )
        serve_http(app, port=port, unix_socket=unix_socket, token=token)
        return

    async def main() -> None:
        # Our transport, not the SDK's: it answers every malformed line (see mcp_stdio).
        async with stdio_transport() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())

    anyio.run(main)
