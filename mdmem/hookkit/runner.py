"""The hook kit's events: what ``mdmem hook <event> --host H`` does with a host's payload.

Entry point (the warm server runs it by name, the CLI runs it in-process)::

    from mdmem.hookkit.runner import run_event
    stdout: str = run_event(vault, host, event, payload, policy, *, warm=False,
                            probe=None, pause=None)

``vault`` is an open :class:`mdmem.Vault`; ``host`` one of
:data:`~mdmem.hookkit.hosts.HOSTS` (``claude-code``, ``codex``,
``cursor``); ``event`` one of :data:`~mdmem.hookkit.hosts.EVENTS`;
``payload`` the host's stdin JSON, already parsed (any value); ``policy`` a
:class:`~mdmem.hookkit.policy.Policy` (``resolve_policy(cwd)``);
``warm=True`` when the caller holds a warm vault (embedder loaded), so
prompt-submit may use hybrid recall; otherwise it uses keyword recall and
says ``degraded``. ``probe``: the token of a ``mdmem hooks doctor`` run
(the hook writes nothing and says the token and its vault in the context);
``pause``: called between the steps of a long capture (the warm server lets
waiting reads in there). The return value is exactly what the host reads on
stdout. ``run_event`` never raises: an error becomes a log entry and a
one-line notice where the host shows one, with a valid (empty) answer.

Events:

* ``session-start`` — pinned profile facts (the active ``USER.md`` entries
  and memories tagged ``#pinned``), what changed since the host's last
  session and, in a trusted checkout, the team memories accepted most
  recently, composed in one budget by the reading view
  (:meth:`mdmem.memory.desks.reading.Reading.compose`), within
  ``policy.session_tokens``; an untrusted checkout's team folder gets the
  person a notice, not the model its lines.
* ``prompt-submit`` — the top recalled memories and, in a trusted checkout,
  the team lines relevant to the prompt, composed the same way, within
  ``policy.prompt_tokens`` and ``policy.prompt_latency_ms``.
* ``post-tool-use`` / ``post-tool-failure`` — a failed call as a ``gotcha``
  and a later fix as a linked ``bug_fix`` (``vault.sessions.capture_tool_results``;
  ``summaries`` and up); with ``capture = "everything"`` also the call and
  its output as a session turn (``Session.record_tool_output``: secrets
  guard, large outputs stored once under a key). A call failed when the
  host says so (its failure event, an exit code, an error flag) or, for a
  shell command whose payload carries no verdict, when its output shows a
  failure (:func:`mdmem.hookkit.toolfailure.failure_line`). A call the person
  interrupted or refused is no gotcha.
* ``pre-compact`` — a deterministic flush, no LLM: the transcript's turns into
  the session file (``everything``; event ids make a second run a no-op;
  written in steps of about :data:`STEP_SECONDS` each, one commit per step,
  ``pause`` between them)
  and extractive facts (``summaries`` and up).
* ``stop`` / ``session-end`` — decisions, gotchas and bug fixes found in the
  assistant's words, stored with ``[captured:: agent]`` so a person can review
  them, and a session summary (LLM if configured, else extractive): of the
  recorded session (``vault.sessions.summarize``) with ``everything``, else of
  the transcript, rewritten only when new turns came. Hosts with a session
  end (Claude Code, Cursor) summarise there, not after every reply.

Session start lists what changed since the host's last session start
(``vault.git.changes("last-session", agent="<host>-hooks")``, then
``vault.git.mark_seen``).

Tokens are estimated as ``ceil(chars / 4)`` (no tokenizer is installed; four
characters a token is the usual rule of thumb for English text), and every
injected block fits its budget by that estimate.
"""

from __future__ import annotations

import logging
import math
import os
import re
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from mdmem.errors import InvalidInputError, MdmemError
from mdmem.files.blocks import validate_scope
from mdmem.git.seen import ChangeLine, change_lines
from mdmem.hookkit.hosts import (
    EVENTS,
    HOSTS,
    HookInput,
    can_inject,
    parse_input,
    render_output,
)
from mdmem.hookkit.log import HookLog
from mdmem.hookkit.policy import (
    Policy,
    policy_from_json,
    policy_to_json,
    resolve_policy,
    resolve_route,
)
from mdmem.hookkit.toolfailure import failure_line
from mdmem.hookkit.transcript import Turn, read_transcript
from mdmem.memory.capture import extractive
from mdmem.memory.capture.hostdata import host_session_id, safe_record, safe_token
from mdmem.memory.capture.toolcalls import ToolCall
from mdmem.models import Hit, one_line
from mdmem.recall.asdata import (
    INSTRUCTION_FLAG,
    Provenance,
    data_line,
    instruction_like,
    provenance_line,
)
from mdmem.recall.instructions import instruction_cues
from mdmem.recall.pins import pin_note, pinned_by
from mdmem.store.inputs import MAX_MEMORY_CHARS
from mdmem.team.tier import untrusted_hint

if TYPE_CHECKING:
    from mdmem.vault import Vault

__all__ = [
    "PROBE_ENV",
    "STEP_SECONDS",
    "TURNS_PER_STEP",
    "estimate_tokens",
    "run_event",
    "serve_hook",
]

log = logging.getLogger("mdmem.hookkit.runner")

#: Set by ``mdmem hooks doctor``: run the hook for real but change no bookkeeping.
PROBE_ENV = "MDMEM_HOOK_PROBE"
_MAX_LINE_CHARS = 400
_MAX_CAPTURES = 10
_PROBE_BUDGET_S = 10.0
#: Turns written per commit by a capture, to begin with: each step holds the
#: vault (indexing included) for about :data:`STEP_SECONDS`, so reads get in
#: between; the next step's size follows from how long the last one took.
TURNS_PER_STEP = 64
STEP_SECONDS = 1.0
_STEP_LIMITS = (64, 1024)
_MAX_TURN_CHARS = MAX_MEMORY_CHARS - 200  # room for the entry's fields
_CUES = {
    "decision": re.compile(
        r"\b(?:decided|decision|we(?:'ll| will) go with|going with|chose|opted)\b", re.I
    ),
    "bug_fix": re.compile(
        r"\b(?:fixed|the fix (?:was|is)|root cause|resolved the (?:bug|issue|error))\b", re.I
    ),
    "gotcha": re.compile(r"\b(?:gotcha|pitfall|caveat|watch out|turns out|beware)\b", re.I),
}
_TOOL_NAME_BAD = re.compile(r"[^\w.:/-]")


_CHARS_PER_TOKEN = 4


def estimate_tokens(text: str) -> int:
    """A dependency-free token estimate: one token per four characters, rounded up
    (so a budget of N tokens is one of 4·N characters)."""
    return math.ceil(len(text) / _CHARS_PER_TOKEN)


def run_event(
    vault: Vault,
    host: str,
    event: str,
    payload: Any,
    policy: Policy | dict[str, Any] | None = None,
    *,
    warm: bool | None = None,
    probe: str | None = None,
    pause: Callable[[], None] | None = None,
) -> str:
    """Handle one hook event and return the host's stdout; never raises (see module doc)."""
    started = time.perf_counter()
    probe = probe or os.environ.get(PROBE_ENV) or None
    entry: dict[str, Any] = {
        "time": datetime.now(UTC).isoformat(timespec="milliseconds"),
        "event": event,
        "host": host,
    }
    context = notice = ""
    try:
        if event not in EVENTS:
            raise ValueError(f"unknown event {event!r}")
        inp = parse_input(host, event, payload)
        policy = _policy(policy, inp.cwd)
        if warm is None:  # a long-lived server has loaded the embedder; a fresh process hasn't
            warm = vault.admin.embedder_loaded
        entry.update(session=safe_token(inp.session_id), cwd=inp.cwd, policy=policy.source)
        if policy.notes:
            entry["policy_notes"] = list(policy.notes)
            if event == "session-start":  # once a session, where a person will see it
                notice = "mdmem policy: " + "; ".join(policy.notes)[:300]
        if event == "session-start" and (hint := untrusted_hint(inp.cwd)):
            notice = "; ".join(n for n in (notice, hint) if n)
        if not policy.enabled:
            entry["skipped"] = "disabled by policy"
        else:
            scope = validate_scope(policy.scope) or None
            run = _Run(vault, inp, policy, scope, warm, entry, started, probe, pause)
            context = run.handle()
            if probe and can_inject(host, event):
                # What `hooks doctor` looks for: this hook ran, in this vault.
                context += f"\nmdmem hooks doctor probe {probe}: vault {vault.root}\n"
                entry["probe"] = True
    except Exception as exc:  # a hook must answer the host whatever went wrong
        log.warning("hook %s (%s) failed: %s", event, host, exc, exc_info=True)
        entry["error"] = f"{type(exc).__name__}: {one_line(str(exc))}"
        notice = f"mdmem {event} hook failed: {one_line(str(exc))[:200]} (see mdmem hooks log)"
        context = ""
    entry["tokens"] = estimate_tokens(context)
    entry["injected"] = bool(context)
    entry["took_ms"] = round((time.perf_counter() - started) * 1000, 1)
    try:
        HookLog(vault.admin.state_dir).append(entry)
    except OSError as exc:
        log.warning("could not write the hook log: %s", exc)
    try:
        return render_output(host, event, context, notice)
    except ValueError:
        return "{}"


def _policy(policy: Policy | dict[str, Any] | None, cwd: str | None) -> Policy:
    """A :class:`Policy` from itself, its JSON form (``policy_to_json``) or the payload's cwd."""
    if isinstance(policy, Policy):
        return policy
    if isinstance(policy, dict):
        return policy_from_json(policy)
    return resolve_policy(cwd)


class _Run:
    def __init__(
        self,
        vault: Vault,
        inp: HookInput,
        policy: Policy,
        scope: str | None,
        warm: bool,
        entry: dict[str, Any],
        started: float,
        probe: str | None = None,
        pause: Callable[[], None] | None = None,
    ) -> None:
        self.vault = vault
        self.inp = inp
        self.policy = policy
        self.scope = scope
        # The vault root's profile, the project's own scope and the old short-name
        # scopes the person adopted for it: every read goes through the vault's
        # reading view for this reader.
        self.reading = vault.reading(scopes=dict.fromkeys(["", scope or "", *policy.also_reads]))
        self.warm = warm
        self.entry = entry
        self.started = started
        self.probe = bool(probe)
        self.pause = pause
        self.log = HookLog(vault.admin.state_dir)
        # Captured host output is data nobody typed for storage: a secret in it is
        # redacted (the rest kept) rather than refusing the whole turn; "off" stays off.
        mode = vault.settings.secrets
        self.secrets = "redact" if mode == "refuse" else mode

    def handle(self) -> str:
        event = self.inp.event
        if event == "session-start":
            return self.session_start()
        if event == "prompt-submit":
            return self.prompt_submit()
        if event in ("post-tool-use", "post-tool-failure"):
            self.post_tool_use()
        elif event == "pre-compact":
            self.pre_compact()
        else:  # stop, session-end
            self.stop()
        return ""

    # -- injection -------------------------------------------------------------

    def _line(self, item: Any, tail: str = "") -> str:
        """One injected item: its provenance, an instruction-like label, the text
        (as the reading view handed it out, redacted), on one line."""
        return data_line(item, _clip(item.text), tail)

    def session_start(self) -> str:
        budget = self.policy.session_tokens
        if not self.probe:
            # A line a person typed into USER.md is theirs: committed as theirs, it
            # gets an id (mdmem.store.humanlines) and so reaches the profile below.
            self.vault.admin.commit_human_edits()
        self.vault.admin.refresh()  # a person's edits since the last index count as profile too
        candidates = [
            m
            for m in self.reading.list(statuses="active")
            if (m.path.endswith("USER.md") or pinned_by(m))
            # Pinned context is read as standing orders: text that reads as an order
            # to the model is never promoted there (recall may still show it, marked).
            and not instruction_like(m, m.text)
        ]
        # What the budget keeps first: explicitly pinned, then the newest profile entries.
        candidates.sort(key=lambda b: (pinned_by(b) is None, -b.created.timestamp()))
        pinned = [(b.id, self._line(b, f"{b.path}#^{b.id}; {pin_note(b)}")) for b in candidates]
        changed = self._changes()
        # With the repository's team tier: what the team accepted most recently
        # (the prompt hook adds the lines each prompt asks about), once trusted.
        composed = self.reading.compose(
            None,
            budget * _CHARS_PER_TOKEN,
            repo=self.inp.cwd,
            sections=[
                ("### Profile (pinned)", pinned),
                ("### Changed since your last session", changed),
            ],
            title="## mdmem memory",
        )
        self.entry["team"] = {"status": composed.team.status, "ids": composed.team_ids}
        self.entry["ids"] = composed.shown
        self.entry["source"] = self.inp.source
        # A line without an id counts too ("2 edit(s) by a person since then").
        return "" if composed.empty else composed.text

    def _changes(self) -> list[tuple[str, str]]:
        """What changed since this host's last session start (``vault.git.changes``); marked."""
        agent = f"{self.inp.host}-hooks"  # one mark per host: each has its own sessions
        try:
            diff = self.reading.changes("last-session", agent=agent)
        except MdmemError as exc:
            self.entry["changes_error"] = one_line(str(exc))
            return []
        finally:
            if not self.probe:
                self.vault.git.mark_seen(agent=agent)
        if diff.base is None:
            return []  # the host's first session here: everything is "new", nothing is news
        lines: list[tuple[str, str]] = []
        # The lines every door shows (mdmem.git.seen.change_lines), each with its provenance.
        for change in change_lines(diff):
            if change.verb == "edited":
                lines.append(("", f"- {change.author} (person) edited {change.text}"))
                continue
            line = self._changed(change)
            lines.append((change.id, line.replace("- ", f"- {change.verb}: ", 1)))
        return lines

    def _changed(self, change: ChangeLine) -> str:
        """A line of "changed since": the memory's own provenance while it exists,
        else what its commit says (an agent's or a person's)."""
        shown = _clip(change.body)  # the reading view's changes are shown already
        try:
            return data_line(self.reading.get(change.id), shown)
        except MdmemError:
            pass
        prov = Provenance(
            id=change.id,
            date=change.date[:10],
            kind=change.kind or "memory",
            by="agent" if change.is_agent else "person",
            reviewed=not change.is_agent,
            cues=instruction_cues(shown),
        )
        return provenance_line(prov, shown)

    def prompt_submit(self) -> str:
        prompt = (self.inp.prompt or "").strip()
        if not prompt:
            return ""
        if not can_inject(self.inp.host, "prompt-submit"):
            # Cursor's beforeSubmitPrompt has no context field: recalling would cost
            # time for nothing (its agents get memory at sessionStart instead).
            self.entry.update(ids=[], skipped="the host takes no context at this event")
            return ""
        budget_s = self.policy.prompt_latency_ms / 1000
        if self.probe:
            # The doctor checks the wiring and the format; a cold, loaded machine
            # must not make that check flaky. Slowness is reported, not hidden.
            budget_s = max(budget_s, _PROBE_BUDGET_S)
        mode = "hybrid" if self.warm else "keyword"
        degraded = not self.warm
        k = max(1, min(20, self.policy.prompt_tokens // 60 or 1))
        hits, timed_out = _bounded(
            lambda: self.reading.recall(prompt[:2000], k=k, mode=mode),
            budget_s - (time.perf_counter() - self.started),
        )
        if timed_out or hits is None:
            self.entry.update(degraded=True, timed_out=timed_out, ids=[])
            return (
                "## Recalled Memory (mdmem, degraded)\n"
                "_No memories in time: recall exceeded its latency budget._\n"
            )
        degraded = degraded or bool(hits.degraded)
        elapsed_ms = (time.perf_counter() - self.started) * 1000
        if elapsed_ms > self.policy.prompt_latency_ms:
            self.entry["over_budget_ms"] = round(elapsed_ms - self.policy.prompt_latency_ms, 1)
        # The relevance gate's items (mdmem.recall.gate): none when nothing is relevant.
        # The same cut as recall's, prompt_context's and `mdmem context`'s: nothing more.
        shown = [h for h in hits.relevant_items if h.kind != "tool_output"]
        items = [h for h in shown if not self._own_session(h)]
        lines = [(h.id, self._line(h, h.citation)) for h in items]
        title = "## Recalled Memory (mdmem" + (", degraded: keyword only" if degraded else "") + ")"
        # With the repository's team tier (read from the working tree only, once trusted).
        composed = self.reading.compose(
            prompt[:2000],
            self.policy.prompt_tokens * _CHARS_PER_TOKEN,
            repo=self.inp.cwd,
            sections=[("", lines)],
            title=title,
        )
        self.entry["team"] = {"status": composed.team.status, "ids": composed.team_ids}
        text, ids = composed.text, composed.shown
        chosen = set(ids)
        self.entry.update(
            degraded=degraded,
            mode=mode,
            ids=ids,
            why=[_why(h) for h in items if h.id in chosen],
        )
        return text if ids else ""

    def _own_session(self, item: Hit) -> bool:
        """Whether ``item`` is this host session's own material — a summary or a turn
        of it, already in the host's context — by the session id the hooks record."""
        own = _session_id(self.inp)
        if item.field("session") == own:
            return True
        # Turns recorded with capture = "everything" live in the session's own file.
        return item.path.rsplit("/", 1)[-1] == f"{own}.md" and "/sessions/" in f"/{item.path}"

    # -- capture ---------------------------------------------------------------

    def post_tool_use(self) -> None:
        if not self.policy.captures("summaries") or self.probe:
            self.entry["captured"] = 0
            return
        sid = _session_id(self.inp)
        ids: list[str] = []
        inp = self.inp
        if self.secrets != "off":
            # Each string the host sent is redacted as it came: a command line
            # (PGPASSWORD=… psql, mysql -p…, a token wrapped over two lines inside
            # quotes) is judged whole before it is quoted into JSON or flattened
            # to one line for a gotcha, forms in which its syntax is lost.
            inp = replace(
                inp,
                tool_input=safe_record(inp.tool_input),
                tool_output=safe_record(inp.tool_output),
                error=safe_record(inp.error),
            )
        if self.policy.captures("everything"):
            tool = _TOOL_NAME_BAD.sub("_", inp.tool_name or "tool")[:64] or "tool"
            output = inp.tool_output if inp.tool_output is not None else inp.error
            body = f"input: {_as_text(inp.tool_input)}\n\noutput: {_as_text(output)}"
            memory = self._session().record_tool_output(tool, body, secrets=self.secrets)
            ids.append(memory.id)
        call = _tool_call(inp)
        if call is None:
            self.entry.update(captured=len(ids), ids=ids, skipped="the person stopped the call")
            return
        # A failed call becomes a gotcha, a later fix a linked bug_fix (OAK's post-tool step).
        captured = self.vault.sessions.capture_tool_results(sid, [call], scope=self.scope)
        ids += [m.id for m in captured if m.was_new]
        self.entry.update(captured=len(ids), ids=ids, failed=call.failed)

    def _session(self) -> Any:
        return self.vault.session(_session_id(self.inp), source=self.inp.host, scope=self.scope)

    def _turns(self) -> list[Turn]:
        path = self.inp.transcript_path
        return read_transcript(path) if path else []

    def _record_turns(self, turns: list[Turn]) -> list[str]:
        """Turns into the session file; event ids make a re-run write nothing.

        One commit per step of turns (:data:`TURNS_PER_STEP` at first, then
        sized to take :data:`STEP_SECONDS`) where ``Session.record`` joins a
        batch, with :attr:`pause` between the steps; where it can't (it
        refuses its first turn inside one), one commit per new turn.
        """
        session = self._session()
        new: list[str] = []
        at, size = 0, TURNS_PER_STEP
        while at < len(turns):
            step = turns[at : at + size]
            if at and self.pause is not None:
                self.pause()
            started = time.perf_counter()
            try:
                # The store's batch: automatic consolidation waits for the last step.
                with self.vault.batch(
                    f"hook {self.inp.event}: turns of {session.id}", consolidate=False
                ):
                    new += self._record_each(session, step, batched=True)
            except _UnbatchableError:
                new += self._record_each(session, step, batched=False)
            at += len(step)
            took = max(time.perf_counter() - started, 1e-3)
            low, high = _STEP_LIMITS
            size = max(low, min(high, int(len(step) * STEP_SECONDS / took)))
        if new:
            with self.vault.batch(None):
                pass  # nothing to write: its end runs automatic consolidation, once
        return new

    def _record_each(self, session: Any, turns: list[Turn], *, batched: bool) -> list[str]:
        new: list[str] = []
        for i, turn in enumerate(turns):
            try:
                m = session.record(
                    turn.role,
                    _fit_turn(turn.text),
                    event_id=turn.event_id,
                    when=turn.when,
                    secrets=self.secrets,
                )
            except MdmemError as exc:
                if batched and i == 0:
                    raise _UnbatchableError from exc  # nothing written yet: retry turn by turn
                self.entry.setdefault("skipped_turns", []).append(one_line(str(exc))[:120])
                continue
            if m.was_new:
                new.append(m.id)
        return new

    def pre_compact(self) -> None:
        if not self.policy.captures("summaries") or self.probe:
            return
        turns = self._turns()
        ids = self._record_turns(turns) if self.policy.captures("everything") else []
        messages = [{"role": t.role, "content": t.text} for t in turns]
        # No LLM here on purpose: compaction must not wait on (or pay for) a model.
        result = self.vault.sessions.flush(
            messages,
            llm=None,
            scope=self.scope,
            session=_session_id(self.inp),
        )
        ids += [m.id for m in result.memories if m.was_new]
        self.entry.update(captured=len(ids), ids=ids, turns=len(turns))

    def stop(self) -> None:
        if not self.policy.captures("summaries") or self.probe:
            return
        turns = self._turns()
        ids = self._record_turns(turns) if self.policy.captures("everything") else []
        ids += self._capture(turns)
        # Claude Code and Cursor fire stop after every reply and have a session end:
        # the summary waits for it. Codex has no session end, so its stop summarises.
        if self.inp.event == "session-end" or "session-end" not in HOSTS[self.inp.host].events:
            if self.policy.captures("everything"):
                # The turns are in the session file: its summary covers each span once.
                memory = self.vault.sessions.summarize(_session_id(self.inp), scope=self.scope)
                summary = memory.id if memory is not None and memory.was_new else None
            else:
                summary = self._summary(turns)
            if summary:
                ids.append(summary)
        self.entry.update(captured=len(ids), ids=ids, turns=len(turns))

    def _fields(self, *texts: str) -> list[tuple[str, str]]:
        # Set by the host side, never parsed from the text: a person reviews these.
        # Text that reads as an order to a model is kept (it is what was said) and
        # flagged, so nothing promotes it to pinned context and a reviewer sees it.
        fields = [
            ("captured", "agent"),
            ("host", self.inp.host),
            ("session", _session_id(self.inp)),
        ]
        if any(instruction_cues(text) for text in texts):
            fields.append(("flag", INSTRUCTION_FLAG))
        return fields

    def _capture(self, turns: list[Turn]) -> list[str]:
        found: list[tuple[str, str, str]] = []  # (kind, sentence, the turn it came from)
        for turn in turns:
            if turn.role != "assistant":
                continue
            for sentence in extractive.sentences(turn.text):
                for kind, cue in _CUES.items():
                    if cue.search(sentence) and len(sentence) >= 20:
                        found.append((kind, sentence, turn.text))
                        break
        out: list[str] = []
        with self.vault.batch(f"hook {self.inp.event}: capture from {_session_id(self.inp)}"):
            for kind, text, source in found[-_MAX_CAPTURES:]:
                try:
                    m = self.vault.remember(
                        text,
                        kind=kind,
                        scope=self.scope,
                        # Judged on the whole turn too: extraction may cut the cue away.
                        fields=self._fields(text, source),
                        secrets=self.secrets,
                    )
                except MdmemError as exc:
                    self.entry.setdefault("skipped_captures", []).append(one_line(str(exc))[:120])
                    continue
                if m.was_new:
                    out.append(m.id)
        return out

    def _summary(self, turns: list[Turn]) -> str | None:
        """One live summary per session, rewritten (superseded) only when new turns came."""
        if not turns:
            return None
        sid = _session_id(self.inp)
        key = f"summary:{self.inp.host}:{sid}"
        state = self.log.state().get(key) or {}
        span = turns[-1].event_id
        if state.get("span") == span:
            return None  # this span is summarised already
        text = _summarize(self.vault, turns)
        if not text:
            return None
        # remember stores identical text once: without the session in the text, two
        # sessions summarised in the same words would share one memory (the second
        # session left without a summary of its own). A sentence of its own, at the end,
        # so the summary still starts with its method (as summaries.summarize_session).
        text = f"{text.rstrip()} (Session {sid}, {len(turns)} turns.)"
        # A summary of a session with a turn that reads as orders to a model is flagged.
        fields = [*self._fields(text, *(t.text for t in turns)), ("turns", str(len(turns)))]
        memory = self.vault.remember(
            text, kind="session_summary", scope=self.scope, fields=fields, secrets=self.secrets
        )
        old = state.get("id")
        if old and old != memory.id:
            # The newer summary covers the older one's turns too; retire, don't delete.
            try:
                self.vault.resolve(old, status="superseded")
            except MdmemError as exc:  # forgotten or edited away by a person meanwhile
                self.entry["summary_note"] = one_line(str(exc))[:120]
        self.log.update_state(key, {"span": span, "id": memory.id})
        return memory.id if memory.was_new else None


class _UnbatchableError(Exception):
    """The first turn was refused inside a batch: record the turns one by one."""


def _summarize(vault: Vault, turns: list[Turn]) -> str:
    pairs = [(t.role, t.text) for t in turns]
    llm = vault.llm
    if llm is not None:
        from mdmem.providers.llm import DATA_INSTRUCTIONS, data_block

        convo = "\n".join(f"{r}: {t}" for r, t in pairs)[-20_000:]
        try:
            reply = llm.chat(
                [
                    {
                        "role": "system",
                        "content": "Summarise this coding session in at most five sentences: "
                        "the goal, what was done, decisions and open problems. "
                        + DATA_INSTRUCTIONS,
                    },
                    {"role": "user", "content": data_block("session", convo)},
                ]
            )
            text = " ".join(reply.split())
            if text:
                return "Session summary (LLM): " + text[:2000]
        except MdmemError as exc:
            log.warning("LLM summary failed, using the extractive one: %s", exc)
    text = extractive.summarize(pairs, max_sentences=4, max_chars=900)
    return f"Session summary (extractive): {text}" if text else ""


_EXIT = re.compile(r"\bexit(?:ed with)?(?: code|_code| status)?:?\s*(-?\d+)", re.I)


def _tool_call(inp: HookInput) -> ToolCall | None:
    """The host's view of one call, or None for a call the person stopped.

    Failure from the host's own word first (its failure event, an exit code,
    an error flag), else, for a shell command, from what its output shows
    (:func:`~mdmem.hookkit.toolfailure.failure_line`).
    """
    if inp.interrupted:
        return None
    out = inp.tool_output
    success: bool | None = None
    exit_code: int | None = None
    if isinstance(out, dict):
        meta = out.get("metadata")
        for source in (out, meta if isinstance(meta, dict) else {}):
            for key in ("exit_code", "exitCode", "returncode", "return_code"):
                value = source.get(key)
                if isinstance(value, int) and not isinstance(value, bool):
                    exit_code = value
        if out.get("is_error") or out.get("isError") or out.get("interrupted"):
            success = False
        elif out.get("success") is not None:
            success = bool(out["success"])
        text = "\n".join(str(out.get(k) or "") for k in ("stdout", "stderr", "error", "output"))
    else:
        text = _as_text(out) if out is not None else ""
    if inp.error is not None:  # the host's failure event: its message says what broke
        success = False
        text = f"{inp.error}\n{text}".strip()
    first = text.strip().split("\n", 1)[0][:200]
    if exit_code is None and (m := _EXIT.search(first)):
        exit_code = int(m.group(1))  # e.g. "Exit code 1" on the first line
    tool = _TOOL_NAME_BAD.sub("_", inp.tool_name or "tool")[:64] or "tool"
    if success is None and exit_code is None:
        command = inp.tool_input.get("command") if isinstance(inp.tool_input, dict) else None
        if failure_line(tool, command if isinstance(command, str) else "", text):
            success = False  # a shell run whose output shows it failed (no verdict sent)
    return ToolCall(
        tool=tool,
        input=inp.tool_input
        if isinstance(inp.tool_input, (str, dict))
        else _as_text(inp.tool_input),
        output=text.strip(),
        success=success,
        exit_code=exit_code,
        id=inp.call_id,
    )


def _fit_turn(text: str) -> str:
    """A turn short enough to be one memory; a longer one keeps its head and says so."""
    if len(text) <= _MAX_TURN_CHARS:
        return text
    head = text[: _MAX_TURN_CHARS - 80].rstrip()
    return f"{head}\n… ({len(text) - len(head):,} more characters in the host's transcript)"


def _session_id(inp: HookInput) -> str:
    return host_session_id(inp.host, inp.session_id)


def _clip(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= _MAX_LINE_CHARS else flat[: _MAX_LINE_CHARS - 1] + "…"


def _as_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    import json

    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError):
        return str(value)


def _why(hit: Hit) -> dict[str, Any]:
    return {
        "id": hit.id,
        "score": round(hit.score, 4),
        "scores": {k: round(v, 4) for k, v in hit.scores.items()},
        "citation": hit.citation,
    }


def _bounded(func: Callable[[], Any], seconds: float) -> tuple[Any, bool]:
    """``func()`` in a daemon thread, given ``seconds``: (result or None, timed out)."""
    if seconds <= 0:
        return None, True
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = func()
        except BaseException as exc:  # handed back to the caller's thread
            box["error"] = exc

    worker = threading.Thread(target=target, name="mdmem-hook-recall", daemon=True)
    worker.start()
    worker.join(seconds)
    if worker.is_alive():
        return None, True
    if "error" in box:
        raise box["error"]
    return box.get("value"), False


def serve_hook(
    vault: Vault, params: dict[str, Any], *, pause: Callable[[], None] | None = None
) -> Any:
    """The warm server's ``hook`` method: one coding-agent hook event, by :func:`run_event`.

    Params: ``host``, ``event``, ``payload`` (the host's hook JSON),
    ``policy`` (the project's policy, as hostkit takes it), ``probe`` (the
    token of a ``hooks doctor`` run) and ``client`` (the host's process, for
    :class:`HostSessions`). ``pause``: called between a capture's steps.
    """
    probe = params.get("probe")
    # Unchecked on purpose: run_event answers an odd host or event as it documents.
    host: Any = params.get("host")
    event: Any = params.get("event")
    policy = params.get("policy")
    if "route" in params:  # mdmem.hookkit.client: the server decides as the hook process would
        routed = hook_route(vault, params)
        if isinstance(routed, str):
            return routed
        policy = routed
    return run_event(
        vault,
        host,
        event,
        params.get("payload"),
        policy,
        probe=probe if isinstance(probe, str) else None,
        pause=pause,
    )


def hook_route(vault: Vault, params: dict[str, Any]) -> dict[str, Any] | str:
    """The policy of a routed hook request (see :func:`~mdmem.hookkit.policy.resolve_route`),
    or the answer itself: the host's empty answer where the hooks are off. A request
    whose vault is another one is refused, so its client runs the hook itself."""
    try:
        root, policy = resolve_route(params["route"] if isinstance(params["route"], dict) else {})
    except (OSError, ValueError) as exc:
        raise InvalidInputError(f"hook route: {exc}"[:300]) from None
    if os.path.realpath(root) != os.path.realpath(vault.root):
        raise InvalidInputError(f"hook route: the hook's vault is {root}, not this one")
    if not policy.enabled:
        return render_output(str(params.get("host")), str(params.get("event")))
    return policy_to_json(policy)
