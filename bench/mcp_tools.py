"""Size of the MCP tool list a client puts in the model's context, per tool.

Usage: python bench/mcp_tools.py [--json]

Starts ``mdmem serve`` on a fresh vault over stdio, lists its tools with a
real MCP client and prints, per tool and in total, the characters of the JSON
the client forwards (name, description, inputSchema, annotations) and an
estimate of its tokens. No tokenizer ships with mdmem (tiktoken downloads its
tables at run time), so two estimates are printed: characters / 4 (OpenAI's
rule of thumb for English) and a count of words and punctuation marks (JSON
is punctuation-heavy, so this one runs high); the budget the tests hold is on
the first.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import emit_json, print_table, scratch_dir

_PIECE = re.compile(r"\w+|[^\w\s]")


def tool_json(tool: Any) -> dict[str, Any]:
    """What a client sends on to the model for one listed tool."""
    out: dict[str, Any] = {
        "name": tool.name,
        "description": tool.description,
        "inputSchema": tool.input_schema,
    }
    if tool.annotations is not None:
        out["annotations"] = tool.annotations.model_dump(by_alias=True, exclude_none=True)
    return out


def estimate(text: str) -> dict[str, int]:
    return {"chars": len(text), "tokens": -(-len(text) // 4), "pieces": len(_PIECE.findall(text))}


def list_tools(vault_root: Path, repo: Path) -> list[Any]:
    import anyio
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    env = {
        "MDMEM_STATE_DIR": os.environ.get("MDMEM_STATE_DIR", str(vault_root.parent / "_state")),
        "MDMEM_EMBEDDER_PROVIDER": "hash",
        "PYTHONPATH": str(repo),
    }
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "mdmem.cli.serve", "serve", "--vault", str(vault_root)],
        env=env,
    )
    found: list[Any] = []

    async def session() -> None:
        with open(os.devnull, "w") as errlog:
            async with (
                stdio_client(params, errlog=errlog) as (read, write),
                ClientSession(read, write) as client,
            ):
                await client.initialize()
                found.extend((await client.list_tools()).tools)

    anyio.run(session)
    return found


def measure(vault_root: Path, repo: Path) -> dict[str, Any]:
    tools = list_tools(vault_root, repo)
    per_tool = {t.name: estimate(json.dumps(tool_json(t), ensure_ascii=False)) for t in tools}
    whole = json.dumps([tool_json(t) for t in tools], ensure_ascii=False)
    return {"tools": per_tool, "total": estimate(whole)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    repo = Path(__file__).resolve().parent.parent
    from mdmem import Vault

    tmp = scratch_dir("mdmem-mcp-tools-")
    Vault.init(tmp / "vault", agent="bench").close()
    result = measure(tmp / "vault", repo)
    if args.json:
        emit_json(result)
        return
    rows = [[name, m["chars"], m["tokens"], m["pieces"]] for name, m in result["tools"].items()]
    total = result["total"]
    rows.append(["TOTAL (list as sent)", total["chars"], total["tokens"], total["pieces"]])
    print_table("MCP tool list", ["tool", "chars", "~tokens (chars/4)", "words+punct"], rows)


if __name__ == "__main__":
    main()
