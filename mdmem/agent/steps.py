"""Step-history compaction (OrcBot), beside the conversation compaction of :mod:`.compaction`.

An agent working on one action accumulates steps (tool calls and their
observations). OrcBot compacts that history when it holds more than
``stepCompactionThreshold`` (10) steps, keeping the first
``stepCompactionPreserveFirst`` (2) and the last ``stepCompactionPreserveLast``
(5) verbatim and summarising the middle. :func:`compact_steps` does that:

    [step 1] [step 2] [summary of steps 3..n-5] [last 5 steps]

The first steps hold the plan, the last ones the current state; the middle
is what a summary can stand for. Steps are strings or dicts (a dict's
``content``/``observation``/``text`` is its text, its ``skill``/``tool``
names what ran); the input is never mutated. The summariser is an LLM
(:func:`step_summarizer`, steps sent as delimited data) or, without one or
when it fails, extractive (:func:`mdmem.memory.capture.extractive.summarize`), so
the middle is always summarised, never just dropped. A summary item from an
earlier round is part of the next middle, so rounds build on each other.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mdmem.errors import InvalidInputError
from mdmem.memory.capture import extractive
from mdmem.models import one_line
from mdmem.providers.llm import DATA_INSTRUCTIONS, LLMClient, data_block

__all__ = [
    "KEEP_FIRST",
    "KEEP_LAST",
    "STEP_SUMMARY_MARKER",
    "STEP_THRESHOLD",
    "StepCompaction",
    "compact_steps",
    "step_summarizer",
    "step_text",
]

log = logging.getLogger("mdmem.agent.steps")

STEP_THRESHOLD = 10  # OrcBot stepCompactionThreshold: compact when > N steps
KEEP_FIRST = 2  # OrcBot stepCompactionPreserveFirst
KEEP_LAST = 5  # OrcBot stepCompactionPreserveLast
STEP_SUMMARY_MARKER = "[mdmem step summary]"
_STEP_CHARS = 1500  # OrcBot memoryContentMaxLength: one step's text at most
_SUMMARY_CHARS = 1200

StepSummarizer = Callable[[list[str]], str]
Step = str | Mapping[str, Any]

_SYSTEM = (
    "You compress the middle of an AI agent's step history. Summarise the steps in a few "
    "short sentences: what was tried, what each tool returned that still matters (ids, "
    "paths, numbers, errors), and what was concluded. Plain text, no preamble. " + DATA_INSTRUCTIONS
)


@dataclass
class StepCompaction:
    """Outcome of :func:`compact_steps`: the new history and what happened."""

    steps: list[Step]
    compacted: bool
    summary: str | None  # the middle's summary (None when nothing was compacted)
    summarized: int  # how many steps the summary stands for
    extractive: bool  # True when the extractive summariser wrote it


def step_text(step: Step) -> str:
    """The text of one step, with the tool that ran, on one line."""
    if isinstance(step, Mapping):
        body = ""
        for key in ("content", "observation", "text", "result", "summary"):
            value = step.get(key)
            if isinstance(value, str) and value.strip():
                body = value
                break
        tool = step.get("skill") or step.get("tool")
        number = step.get("step")
        head = " ".join(
            x for x in (f"step {number}" if number is not None else "", str(tool or "")) if x
        )
        text = f"{head}: {body}" if head else body
    else:
        text = str(step)
    return one_line(text, _STEP_CHARS)


def step_summarizer(client: LLMClient) -> StepSummarizer:
    """An LLM summariser for :func:`compact_steps`."""

    def summarize(texts: list[str]) -> str:
        reply = client.chat(
            [
                {"role": "system", "content": _SYSTEM},
                {
                    "role": "user",
                    "content": data_block("steps", "\n".join(texts)) + "\n\nSummarise them now.",
                },
            ],
            max_tokens=400,
        )
        return reply.strip()

    return summarize


def _extractive(texts: list[str]) -> str:
    text = extractive.summarize(
        [("tool", t) for t in texts], max_sentences=4, max_chars=_SUMMARY_CHARS
    )
    return text or "; ".join(one_line(t, 160) for t in texts[:3])


def compact_steps(
    steps: Sequence[Step],
    summarize: StepSummarizer | LLMClient | None = None,
    *,
    threshold: int = STEP_THRESHOLD,
    keep_first: int = KEEP_FIRST,
    keep_last: int = KEEP_LAST,
) -> StepCompaction:
    """Keep the first and last steps and summarise the middle once there are too many."""
    if isinstance(steps, (str, bytes)) or not isinstance(steps, Sequence):
        raise InvalidInputError("steps must be a list of strings or dicts")
    for value, name in (
        (threshold, "threshold"),
        (keep_first, "keep_first"),
        (keep_last, "keep_last"),
    ):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise InvalidInputError(f"{name} must be a non-negative integer")
    items = list(steps)
    middle = items[keep_first : len(items) - keep_last]
    if len(items) <= threshold or len(middle) < 2:
        return StepCompaction(copy.deepcopy(items), False, None, 0, False)
    texts = [step_text(s) for s in middle]
    fn = step_summarizer(summarize) if isinstance(summarize, LLMClient) else summarize
    summary = ""
    if fn is not None:
        try:
            summary = one_line(fn(texts), _SUMMARY_CHARS)
        except Exception as exc:  # any summariser failure: the extractive one still works
            log.warning("step summary failed, using extractive: %s: %s", type(exc).__name__, exc)
    extract = not summary
    if extract:
        summary = _extractive(texts)
    first = keep_first + 1
    label = f"{STEP_SUMMARY_MARKER} steps {first}-{first + len(middle) - 1}: {summary}"
    marker: Step
    if all(isinstance(s, Mapping) for s in items):
        marker = {"type": "summary", "content": label, "summarized": len(middle)}
    else:
        marker = label
    out = [
        *copy.deepcopy(items[:keep_first]),
        marker,
        *copy.deepcopy(items[len(items) - keep_last :]),
    ]
    return StepCompaction(out, True, summary, len(middle), extract)
