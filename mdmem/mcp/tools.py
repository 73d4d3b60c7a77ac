"""OpenAI-style function tools over a :class:`~mdmem.Vault` (after Martha and operator_use).

A :class:`Toolset` gives a model a few verbs — ``recall``, ``remember``,
``forget``, ``get``, ``reflect``, ``read_tool_output`` (plus ``history`` and
``context`` for MCP clients) — as JSON-schema function definitions
(:attr:`Toolset.schemas`) and one entry point, :meth:`Toolset.dispatch`, that
validates the model's arguments and returns a JSON-serialisable dict. It never
raises for anything the model sends: a bad call comes back as
``{"error": {"type": ..., "message": ...}}`` the model can read and correct.

Scopes are the host's decision, never the model's. The host passes
``allowed_scopes`` (None: everything) and ``default_scope`` when it builds the
tool set; a ``scope`` argument from the model can only pick within that set.
The vault root scope is spelled ``"root"`` in tool arguments and results
(``""`` is accepted as well); ``"any"`` means every allowed scope. Reading,
writing, forgetting or fetching a memory outside the allowed set returns a
``scope_denied`` error and no data.

The MCP server (:mod:`mdmem.mcp.server`) serves the same Toolset, so both
front doors share one validation and one set of scope rules.
"""

from __future__ import annotations

import functools
import json
import logging
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mdmem.aliases import Alias, AliasTable
from mdmem.errors import (
    ConflictError,
    DuplicateIdError,
    HumanNoteError,
    InvalidInputError,
    LLMError,
    LLMNotConfiguredError,
    LockTimeoutError,
    MdmemError,
    MemoryNotFoundError,
    ScopeDeniedError,
    SecretRefusedError,
)
from mdmem.files.blocks import ROOT_SCOPE, validate_scope
from mdmem.files.ids import normalize_id
from mdmem.mcp import session_tools
from mdmem.models import KINDS, STATUSES, Hit, Memory, Recall, to_jsonable

if TYPE_CHECKING:
    from mdmem.memory.desks.compose import Composed
    from mdmem.vault import Vault

__all__ = [
    "ALL_TOOLS",
    "DEFAULT_TOOLS",
    "MAX_TOP_K",
    "ROOT_SCOPE",
    "TOOL_ARGUMENTS",
    "TOOL_HINTS",
    "WRITABLE_KINDS",
    "Toolset",
    "scope_label",
]

log = logging.getLogger("mdmem.mcp.tools")

ANY_SCOPE = "any"
MAX_TOP_K = 20
MAX_CONTENT_CHARS = 4000  # per recalled item; `get` returns the whole memory
# Kinds an agent may store with `remember`. The others are written by mdmem
# itself (chat_message, tool_output by sessions; episode, session_summary by
# consolidation; log and journal by their own verbs; note is a person's text):
# a model offered them would file a fact where recall and consolidation treat
# it as something else.
WRITABLE_KINDS: tuple[str, ...] = (
    "fact",
    "preference",
    "decision",
    "learning",
    "world",
    "gotcha",
    "bug_fix",
    "discovery",
    "trade_off",
)

# MCP tool annotations (spec 2025-03-26 `ToolAnnotations`): hints a client uses
# to decide what needs the user's confirmation. readOnly: changes nothing in the
# vault; destructive: may remove what is there; idempotent: a second identical
# call has no further effect (remember dedupes, forget of a gone id is not_found).
# openWorldHint is left out: it costs tokens on every request and says little.
TOOL_HINTS: dict[str, dict[str, bool]] = {
    "recall": {"readOnlyHint": True},
    "get": {"readOnlyHint": True},
    "history": {"readOnlyHint": True},
    "context": {"readOnlyHint": True},
    "read_tool_output": {"readOnlyHint": True},
    # Reads memories; the configured LLM may be a remote endpoint.
    "reflect": {"readOnlyHint": True},
    "remember": {
        "readOnlyHint": False,
        "destructiveHint": False,
        "idempotentHint": True,
    },
    "forget": {
        "readOnlyHint": False,
        "destructiveHint": True,
        "idempotentHint": True,
    },
    # Reversible status changes: nothing is removed.
    "archive": {
        "readOnlyHint": False,
        "destructiveHint": False,
        "idempotentHint": True,
    },
    "unarchive": {
        "readOnlyHint": False,
        "destructiveHint": False,
        "idempotentHint": True,
    },
}

# What an agent loop sees by default; `history` and `context` are for MCP clients.
DEFAULT_TOOLS: tuple[str, ...] = (
    "recall",
    "remember",
    "forget",
    "get",
    "reflect",
    "read_tool_output",
)
# Offered on request (``tools=``) and over MCP.
ALL_TOOLS: tuple[str, ...] = (
    *DEFAULT_TOOLS,
    "history",
    "context",
    "archive",
    "unarchive",
    "contact_profile",
    *session_tools.SPECS,
)

# Recall controls (mdmem.recall.controls) the recall tool passes on as given.
_CONTROLS = ("exclude_ids", "source", "contact", "session", "author", "status", "scope_weights")

_SCOPE_HELP = 'e.g. "user:alice"; "root" is the shared root. Omit for the default.'


def scope_label(scope: str) -> str:
    """The model-facing name of a scope: ``"root"`` for the vault root."""
    return scope or ROOT_SCOPE


def _params(properties: dict[str, Any], required: Sequence[str] = ()) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": list(required),
        "additionalProperties": False,
    }


# Argument names a tool accepted before (tool → old → new name): callers written
# against an older schema keep working, with a warning; the schema shows only the new name.
TOOL_ARGUMENTS = AliasTable(
    "tool arguments",
    {"read_tool_output.tool_output_key": Alias("read_tool_output(tool_output_key=…)", "key=…")},
)
_ALIASES: dict[str, dict[str, str]] = {"read_tool_output": {"tool_output_key": "key"}}

_MEMORY_ID = {
    "type": "string",
    "description": "m-… or notes/x.md#Heading",
}

_TOP_K = {
    "type": "integer",
    "minimum": 1,
    "maximum": MAX_TOP_K,
    "default": 5,
    "description": "How many items.",
}
_QUERY = {"type": "string", "description": "What to look for."}
# A code checkout whose team memory to add (see Toolset). Recall's copy is shorter:
# the tool list travels with every request and recall is near its cap.
_REPO = {"type": "string", "description": "A git checkout's path: adds its team memory."}
_TIER = {
    "type": "integer",
    "minimum": 0,
    "maximum": 2,
    "default": 2,
    "description": "0 abstracts, 1 overviews, 2 full; get opens one by id.",
}

# Descriptions are short on purpose: a client sends the whole tool list with
# every request (bench/mcp_tools.py prints its size; tests hold a budget).
_SPECS: dict[str, tuple[str, dict[str, Any]]] = {
    "recall": (
        "Search long-term memory (facts, preferences, chats, tool outputs, notes) by "
        "meaning and keywords; use before answering what may depend on earlier sessions. "
        "Empty means nothing relevant is stored.",
        _params(
            {
                "query": _QUERY,
                "top_k": _TOP_K,
                "source_kinds": {
                    "type": "array",
                    "items": {"type": "string", "enum": list(KINDS)},
                    "description": "Only these kinds.",
                },
                "scope": {"type": "string", "description": 'One allowed scope, or "any".'},
                "since": {"type": "string", "description": "ISO date."},
                "exclude_ids": {
                    "type": "array",
                    "items": {"type": "string"},
                    "description": "Seen ids.",
                },
                "source": {"type": "string", "description": "e.g. telegram"},
                "contact": {"type": "string", "description": "e.g. telegram:123"},
                "session": {"type": "string", "description": "Session id."},
                "author": {"type": "string", "description": 'Or "human".'},
                "status": {
                    "type": "string",
                    "enum": list(STATUSES),
                    "description": "Default active.",
                },
                "scope_weights": {
                    "type": "object",
                    "additionalProperties": {"type": "number", "minimum": 0},
                    "description": "0 hides a scope.",
                },
                "tier": _TIER,
                "repo": {"type": "string", "description": "A checkout."},
            },
            ["query"],
        ),
    ),
    "remember": (
        "Store one durable, self-contained statement (a fact, preference, decision, "
        "lesson). Storing it twice is harmless; it replaces an older one it contradicts.",
        _params(
            {
                "content": {"type": "string", "description": "The statement."},
                "kind": {
                    "type": "string",
                    "enum": list(WRITABLE_KINDS),
                    "default": "fact",
                    "description": "preference: the user's likes.",
                },
                "tags": {
                    "type": "array",
                    "items": {"type": "string"},
                    "description": "Short topic tags (letters, digits, _ - /).",
                },
                "scope": {"type": "string", "description": _SCOPE_HELP},
                "importance": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": 10,
                    "description": "1-10; omit if unsure.",
                },
            },
            ["content"],
        ),
    ),
    "forget": (
        "Delete a wrong or unwanted memory by id (git keeps history); a person's notes "
        "are refused.",
        _params({"memory_id": _MEMORY_ID}, ["memory_id"]),
    ),
    "archive": (
        "Hide a memory from recall and lists without deleting it; unarchive restores it.",
        _params({"memory_id": _MEMORY_ID}, ["memory_id"]),
    ),
    "unarchive": (
        "Make an archived memory active again.",
        _params({"memory_id": _MEMORY_ID}, ["memory_id"]),
    ),
    "get": (
        "Read one memory or note section in full by id.",
        _params({"memory_id": _MEMORY_ID}, ["memory_id"]),
    ),
    "reflect": (
        "Answer a question by synthesising across many memories, with citations. "
        "Slower than recall.",
        _params({"query": _QUERY}, ["query"]),
    ),
    "read_tool_output": (
        "Read the full text of a tool output recall showed as a preview, by its "
        "tool_output_key (tout_…).",
        _params({"key": {"type": "string", "description": "tout_…"}}, ["key"]),
    ),
    "history": (
        "Versions of a memory from git: who changed it, when, what it said.",
        _params({"memory_id": _MEMORY_ID}, ["memory_id"]),
    ),
    "contact_profile": (
        "Who a person is: display name, the platform ids linked to them (telegram:123, "
        "whatsapp:+1...), first and last seen, and the ids of the facts known about them "
        "(open one with get). Read-only: links are set by the application, not by you.",
        _params(
            {
                "who": {
                    "type": "string",
                    "description": "A person id (user:alice) or a platform id (telegram:123).",
                }
            },
            ["who"],
        ),
    ),
    "context": (
        'A "## Recalled Memory" prompt block for the query, citing path#^id.',
        _params(
            {
                "query": _QUERY,
                "max_chars": {
                    "type": "integer",
                    "minimum": 200,
                    "maximum": 20000,
                    "default": 6000,
                    "description": "Size cap.",
                },
                "top_k": _TOP_K,
                "scope": {"type": "string", "description": 'One allowed scope, or "any".'},
                "tier": _TIER,
                "repo": _REPO,
            },
            ["query"],
        ),
    ),
}


# Tools kept in their own modules, registered beside the ones above.
_SPECS.update(session_tools.SPECS)


class _ArgError(InvalidInputError):
    """Arguments that do not match the tool's schema."""


def _error(kind: str, message: str) -> dict[str, Any]:
    return {"error": {"type": kind, "message": message}}


def _check_args(name: str, schema: Mapping[str, Any], raw: Any) -> dict[str, Any]:
    """Validate ``raw`` against the (small) JSON schema subset the tools use."""
    if raw is None or raw == "":
        raw = {}
    if isinstance(raw, (str, bytes)):
        try:
            raw = json.loads(raw)
        except ValueError as exc:
            raise _ArgError(f"arguments are not valid JSON: {exc}") from None
    if not isinstance(raw, Mapping):
        raise _ArgError("arguments must be a JSON object")
    raw = _unalias(name, raw)
    props: Mapping[str, Any] = schema["properties"]
    unknown = sorted(set(raw) - set(props))
    if unknown:
        raise _ArgError(
            f"unknown argument(s) for {name}: {', '.join(map(str, unknown))}; "
            f"expected: {', '.join(props)}"
        )
    out: dict[str, Any] = {}
    for key in schema.get("required", ()):
        if raw.get(key) is None:
            raise _ArgError(f"{name} needs the argument {key!r}")
    for key, spec in props.items():
        value = raw.get(key)
        if value is None:
            if "default" in spec:
                out[key] = spec["default"]
            continue
        out[key] = _coerce(key, spec, value)
    return out


def _unalias(name: str, raw: Mapping[str, Any]) -> Mapping[str, Any]:
    """``raw`` with old argument names renamed to the schema's."""
    aliases = _ALIASES.get(name, {})
    if not any(old in raw for old in aliases):
        return raw
    out = dict(raw)
    for old, new in aliases.items():
        if old not in out:
            continue
        TOOL_ARGUMENTS[f"{name}.{old}"].warn(stacklevel=4)  # past dispatch: the host's call
        value = out.pop(old)
        if out.get(new) is None:
            out[new] = value
        elif value is not None and value != out[new]:
            raise _ArgError(f"{name}: give {new!r} only ({old!r} is its old name)")
    return out


def _coerce(key: str, spec: Mapping[str, Any], value: Any) -> Any:
    kind = spec.get("type")
    if kind == "string":
        if not isinstance(value, str):
            raise _ArgError(f"{key!r} must be a string")
        if not value.strip():
            raise _ArgError(f"{key!r} must not be empty")
        value = value.strip()
    elif kind == "integer":
        # Models sometimes quote numbers; "5" is meant as 5.
        if isinstance(value, str) and value.strip().lstrip("-").isdigit():
            value = int(value)
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int):
            raise _ArgError(f"{key!r} must be an integer")
        low, high = spec.get("minimum"), spec.get("maximum")
        if (low is not None and value < low) or (high is not None and value > high):
            raise _ArgError(f"{key!r} must be between {low} and {high}, got {value}")
    elif kind == "object":
        if not isinstance(value, dict) or not all(
            isinstance(v, (int, float)) and not isinstance(v, bool) for v in value.values()
        ):
            raise _ArgError(f'{key!r} must be a JSON object of numbers, e.g. {{"root": 0.5}}')
        return value
    elif kind == "array":
        # A lone string is refused, not wrapped: "a,b" or "fact preference"
        # would be taken as one odd value and the call would mean something else.
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            example = json.dumps([value] if isinstance(value, str) else ["..."])
            raise _ArgError(f"{key!r} must be a JSON array of strings, e.g. {example}")
        value = [v.strip() for v in value if v.strip()]
        allowed = spec.get("items", {}).get("enum")
        if allowed is not None:
            bad = [v for v in value if v not in allowed]
            if bad:
                raise _ArgError(f"{key!r} has unknown value(s) {bad}; one of: {', '.join(allowed)}")
        return value
    allowed = spec.get("enum")
    if allowed is not None and value not in allowed:
        raise _ArgError(f"{key!r} must be one of: {', '.join(map(str, allowed))}")
    return value


def _normalise_scope(scope: str) -> str:
    text = scope.strip()
    if text.lower() in (ROOT_SCOPE, "(root)", ""):
        return ""
    return validate_scope(text)


def _truncate(text: str, limit: int) -> tuple[str, bool]:
    if len(text) <= limit:
        return text, False
    return text[: limit - 1].rstrip() + "…", True


class Toolset:
    """Function tools over one vault, confined to the scopes the host allows.

    ``allowed_scopes``: the scopes the model may read and write (``"root"`` or
    ``""`` for the vault root); None allows every scope. ``default_scope``:
    where ``remember`` writes when the model names no scope; it defaults to the
    first allowed scope (the root when everything is allowed). ``tools``: the
    names listed in :attr:`schemas` (default :data:`DEFAULT_TOOLS`).
    ``repo``: the code checkout the host works in; ``recall`` and ``context``
    add its team memory (composed by the reading view,
    :meth:`mdmem.memory.desks.reading.Reading.compose`) once the person
    trusts it, as does a checkout the model names in their ``repo`` argument.
    A checkout the person has not trusted gives ``{"status": "untrusted"}``
    and nothing read from it; the hint to trust it goes to the log, for the
    person, never to the model. The team tier is only read here.
    """

    def __init__(
        self,
        vault: Vault,
        allowed_scopes: Iterable[str] | str | None = None,
        default_scope: str | None = None,
        *,
        tools: Iterable[str] | None = None,
        repo: str | os.PathLike[str] | None = None,
    ) -> None:
        self.vault = vault
        self.repo = Path(repo).expanduser().absolute() if repo is not None else None
        if isinstance(allowed_scopes, str):
            allowed_scopes = [allowed_scopes]
        self.allowed: tuple[str, ...] | None = (
            None
            if allowed_scopes is None
            else tuple(dict.fromkeys(_normalise_scope(s) for s in allowed_scopes))
        )
        if self.allowed is not None and not self.allowed:
            raise InvalidInputError("allowed_scopes is empty: the tools could reach nothing")
        # Who the model reads as: every read goes through the vault's reading view.
        self.reading = vault.reading(scopes=self.allowed)
        self.reader = self.reading.reader
        if default_scope is None:
            self.default_scope = self.allowed[0] if self.allowed else ""
        else:
            self.default_scope = _normalise_scope(default_scope)
            if self.allowed is not None and self.default_scope not in self.allowed:
                raise ScopeDeniedError(
                    f"default_scope {scope_label(self.default_scope)!r} is not in allowed_scopes"
                )
        names = tuple(tools) if tools is not None else DEFAULT_TOOLS
        unknown = [n for n in names if n not in _SPECS]
        if unknown:
            raise InvalidInputError(f"unknown tool(s): {', '.join(unknown)}")
        self.names = names
        self._handlers: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
            "recall": self._recall,
            "remember": self._remember,
            "forget": self._forget,
            "get": self._get,
            "reflect": self._reflect,
            "read_tool_output": self._read_tool_output,
            "history": self._history,
            "context": self._context,
            "contact_profile": self._contact_profile,
            "archive": self._archive,
            "unarchive": self._unarchive,
        }
        for extra, handler in session_tools.HANDLERS.items():
            self._handlers[extra] = functools.partial(handler, self)

    # ------------------------------------------------------------- public --

    @property
    def schemas(self) -> list[dict[str, Any]]:
        """OpenAI function-tool definitions (``tools=`` of chat.completions)."""
        return [
            {
                "type": "function",
                "function": {
                    "name": name,
                    "description": self._describe(name),
                    "parameters": json.loads(json.dumps(_SPECS[name][1])),
                },
            }
            for name in self.names
        ]

    def describe(self, name: str) -> tuple[str, dict[str, Any]]:
        """(description, JSON-schema parameters) of one tool; for other front doors."""
        if name not in _SPECS:
            raise InvalidInputError(f"unknown tool {name!r}")
        return self._describe(name), json.loads(json.dumps(_SPECS[name][1]))

    def hints(self, name: str) -> dict[str, bool]:
        """The MCP annotation hints of one tool (readOnlyHint, destructiveHint, ...)."""
        return dict(TOOL_HINTS.get(name, {}))

    def dispatch(
        self, name: str, arguments: Mapping[str, Any] | str | None = None
    ) -> dict[str, Any]:
        """Run one tool call; always returns a JSON-serialisable dict, never raises."""
        if name not in self.names:
            return _error(
                "unknown_tool", f"no tool named {name!r}; available: {', '.join(self.names)}"
            )
        try:
            args = _check_args(name, _SPECS[name][1], arguments)
            result = self._handlers[name](args)
            out: dict[str, Any] = to_jsonable(result)
            return out
        except _ArgError as exc:
            return _error("invalid_arguments", str(exc))
        except ScopeDeniedError as exc:
            return _error("scope_denied", str(exc))
        except MemoryNotFoundError as exc:
            return _error("not_found", str(exc))
        except DuplicateIdError as exc:
            return _error(*self._duplicate(exc))
        except SecretRefusedError as exc:
            return _error("secret_refused", str(exc))
        except HumanNoteError as exc:
            return _error("human_note", str(exc))
        except InvalidInputError as exc:
            return _error("invalid_arguments", str(exc))
        except LLMNotConfiguredError as exc:
            return _error("llm_not_configured", str(exc))
        except LLMError as exc:
            return _error("llm_error", str(exc))
        except (ConflictError, LockTimeoutError) as exc:
            return _error("busy", f"{exc}; try again")
        except MdmemError as exc:
            return _error("error", f"{type(exc).__name__}: {exc}")
        except Exception as exc:  # the model must get an answer, not a crash
            log.exception("tool %s failed", name)
            return _error("internal_error", f"{type(exc).__name__}: {exc}")

    # --------------------------------------------------------- scope rules --

    def readable_scopes(self, requested: str | None) -> list[str] | None:
        """The scopes a read may cover: None means every scope (host allowed all)."""
        if requested is None or requested.strip().lower() == ANY_SCOPE:
            return None if self.allowed is None else list(self.allowed)
        scope = _normalise_scope(requested)
        self._require(scope)
        return [scope]

    def writable_scope(self, requested: str | None) -> str:
        if requested is None:
            return self.default_scope
        if requested.strip().lower() == ANY_SCOPE:
            raise InvalidInputError('"any" is for searching; name one scope to write to')
        scope = _normalise_scope(requested)
        self._require(scope)
        return scope

    def _require(self, scope: str) -> None:
        # The reader decides (the host's scopes, a contact's people): never this door.
        if not self.reader.admits_scope(scope):
            raise ScopeDeniedError(
                f"scope {scope_label(scope)!r} is not allowed here; allowed: "
                + ", ".join(scope_label(s) for s in self.allowed or ())
            )

    def _duplicate(self, exc: DuplicateIdError) -> tuple[str, str]:
        """A copied line's error, naming only the places in scopes this toolset may see."""
        shown = [p for p in exc.places if self.reader.admits_scope(p[2])]
        if not shown:
            return "scope_denied", (
                f"memory {exc.memory_id} belongs to a scope this assistant may not access"
            )
        where = ", ".join(f"{path}:{line}" for path, line, _ in shown)
        hidden = len(exc.places) - len(shown)
        if hidden:
            where += f", and {hidden} more outside the allowed scopes"
        return "duplicate_id", (
            f"{exc.memory_id} is on {len(exc.places)} lines ({where}), a copied line;"
            " ask the user to run `mdmem doctor --fix`"
        )

    def _owned(self, memory_id: str) -> Memory:
        """The memory, if its scope is allowed; otherwise ScopeDeniedError, no data."""
        try:
            return self.reading.get(memory_id)
        except ScopeDeniedError:
            raise ScopeDeniedError(
                f"memory {normalize_id(memory_id)} belongs to a scope this assistant may not access"
            ) from None

    def _describe(self, name: str) -> str:
        text = _SPECS[name][0]
        if self.allowed is not None and name in ("recall", "remember", "context"):
            text += " Allowed scopes: " + ", ".join(scope_label(s) for s in self.allowed) + "."
        return text

    # ------------------------------------------------------------- tools --

    def _recall(self, args: dict[str, Any]) -> dict[str, Any]:
        scopes = self.readable_scopes(args.get("scope"))
        controls = {k: args[k] for k in _CONTROLS if args.get(k) not in (None, [], {})}
        if args["tier"] != 2:
            controls["tier"] = args["tier"]
        if controls.get("status") == "active":
            del controls["status"]  # the default: no widening
        if "scope_weights" in controls:
            # Weights name scopes as tools do ("root"); a weight can't reach past the allowed set.
            for name in controls["scope_weights"]:
                self.readable_scopes(name)
        result = self.reading.recall(
            args["query"],
            k=args["top_k"],
            kinds=args.get("source_kinds") or None,
            scope=scopes,
            since=args.get("since"),
            **controls,
        )
        items = [self._item(hit) for hit in result.items]
        for item in items:
            if item["source_kind"] == "tool_output":
                # The preview is what recall shows; the key lets the model read it all.
                key = self._tool_output_key(item["id"])
                if key:
                    item["tool_output_key"] = key
        out: dict[str, Any] = {
            "items": items,
            "total": len(items),
            "degraded": bool(result.degraded),
            "reranked": bool(result.reranked),
        }
        composed, with_team = self._composed(args, result, None)
        if with_team:
            out["team"] = self._team_json(composed)
        return out

    def _composed(
        self, args: dict[str, Any], result: Recall, max_chars: int | None
    ) -> tuple[Composed, bool]:
        """The reading view's composed context, with the team tier of the host's
        checkout or of the one the model names; and whether to report the team
        (not when neither is a checkout with a team folder and none was named)."""
        named = args.get("repo")
        where: Path | None = None
        if named is not None or self.repo is not None:
            base = self.repo or Path.cwd()
            where = base / Path(named).expanduser() if named is not None else base
        composed = self.reading.compose(args["query"], max_chars, repo=where, recall=result)
        if composed.team.hint:
            # The person reads the server's log; the model doesn't.
            log.warning("%s", composed.team.hint)
        return composed, where is not None and (named is not None or composed.team.status != "none")

    @staticmethod
    def _team_json(composed: Composed) -> dict[str, Any]:
        """What the model gets of the team tier: its status, and only from a trusted
        checkout the lines shown, labelled and fenced as team memory."""
        team = composed.team
        if team.status != "ok":
            return {"status": team.status}
        return {
            "status": "ok",
            "repo": team.repo,
            "ids": list(composed.team_ids),
            "context": composed.team_block,
        }

    def _tool_output_key(self, memory_id: str) -> str | None:
        try:
            key = self.reading.get(memory_id).field("tout")
        except MdmemError:
            return None
        return str(key) if key else None

    @staticmethod
    def _item(hit: Hit) -> dict[str, Any]:
        content, cut = _truncate(hit.text, MAX_CONTENT_CHARS)
        item: dict[str, Any] = {
            "id": hit.id,
            "source_kind": hit.kind,
            "source_ref": hit.citation,
            "content": content,
            "event_time": hit.created.isoformat(),
            "score": hit.score,
            "path": hit.path,
            "line": hit.line_start,
            "line_end": hit.line_end,
            "scope": scope_label(hit.scope),
            "tags": list(hit.tags),
        }
        if cut:
            item["truncated"] = True
        if hit.tier < 2:
            item["tier"] = hit.tier  # an abstract/overview: `get` gives the full text
        return item

    def _remember(self, args: dict[str, Any]) -> dict[str, Any]:
        scope = self.writable_scope(args.get("scope"))
        # A model's call never pins: pinned context is read at every session start.
        tags = [t for t in args.get("tags") or () if str(t).lstrip("#").lower() != "pinned"]
        memory: Memory = self.vault.remember(
            args["content"],
            kind=args["kind"],
            tags=tags,
            scope=scope,
            importance=args.get("importance"),
        )
        out: dict[str, Any] = {
            "id": memory.id,
            "was_new": memory.was_new,
            "path": memory.path,
            "line": memory.line,
            "scope": scope_label(memory.scope),
            "kind": memory.kind,
        }
        if memory.superseded:
            out["superseded"] = list(memory.superseded)
        return out

    def _forget(self, args: dict[str, Any]) -> dict[str, Any]:
        memory = self._owned(args["memory_id"])
        self.vault.forget(memory.id, reason="forgotten through the memory tools")
        return {"id": memory.id, "forgotten": True}

    def _archive(self, args: dict[str, Any]) -> dict[str, Any]:
        memory = self.vault.archive(self._owned(args["memory_id"]).id)
        return {"id": memory.id, "status": memory.status}

    def _unarchive(self, args: dict[str, Any]) -> dict[str, Any]:
        memory = self.vault.unarchive(self._owned(args["memory_id"]).id)
        return {"id": memory.id, "status": memory.status}

    def _get(self, args: dict[str, Any]) -> dict[str, Any]:
        return self._memory_dict(self._owned(args["memory_id"]))

    def _memory_dict(self, memory: Memory) -> dict[str, Any]:
        # A note section's id is already its citation (path.md#Heading).
        ref = f"{memory.path}#^{memory.id}" if memory.id.startswith("m-") else memory.id
        return {
            "id": memory.id,
            "source_kind": memory.kind,
            "source_ref": ref,
            # Shown by the reading view: a secret a person typed into the file stays there.
            "content": memory.text,
            "event_time": memory.created.isoformat(),
            "path": memory.path,
            "line": memory.line,
            "line_end": memory.line_end,
            "scope": scope_label(memory.scope),
            "status": memory.status,
            "tags": list(memory.tags),
        }

    def _history(self, args: dict[str, Any]) -> dict[str, Any]:
        memory_id = args["memory_id"]
        try:
            versions = self.reading.history(memory_id)
        except ScopeDeniedError:
            raise ScopeDeniedError(
                f"memory {normalize_id(memory_id)} belongs to a scope this assistant may not access"
            ) from None
        return {"id": memory_id, "versions": to_jsonable(versions)}

    def _context(self, args: dict[str, Any]) -> dict[str, Any]:
        scopes = self.readable_scopes(args.get("scope"))
        tier = {"tier": args["tier"]} if args["tier"] != 2 else {}
        result = self.reading.recall(args["query"], k=args["top_k"], scope=scopes, **tier)
        composed, with_team = self._composed(args, result, args["max_chars"])
        out: dict[str, Any] = {"context": composed.text, "total": len(result.items)}
        if with_team:
            out["team"] = self._team_json(composed)
        return out

    def _reflect(self, args: dict[str, Any]) -> dict[str, Any]:
        # Confined to the allowed scopes, so the answer draws on nothing else.
        answer = self.vault.reflect(args["query"], reader=self.reader)
        return {
            "answer": answer.answer,
            "citations": list(answer.citations),
            "synthesized": answer.synthesized,
        }

    def _read_tool_output(self, args: dict[str, Any]) -> dict[str, Any]:
        key = args["key"]
        return {"tool_output_key": key, "content": self.reading.tool_output(key)}

    def _contact_profile(self, args: dict[str, Any]) -> dict[str, Any]:
        # Someone outside the reader's scopes answers as an unknown id (reading.py).
        profile, facts = self.reading.contact_profile(args["who"])
        return {
            "person": profile.person,
            "display_name": profile.display_name,
            "platform_ids": profile.platform_ids,
            "first_seen": profile.first_seen,
            "last_seen": profile.last_seen,
            "facts": facts,
        }
