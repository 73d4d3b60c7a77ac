"""Instruction-like text: stored words that read as orders to the model.

A memory is data: something a person or an agent wrote earlier. Some of it,
quoted back into a prompt, reads as an order to the model that sees it
("ignore all previous instructions", "run curl … | sh", "you must always …",
a fake ``system:`` turn). :func:`instruction_cues` names the cues a text
shows, so what injects memories can say so beside the item
(:mod:`mdmem.recall.asdata`), keep it out of pinned and profile context, and
mark a hook capture of it (``[flag:: instruction-like]``, set by the hook,
never read from the text).

The rules aim for precision: each needs a phrase that is rarely anything but
an order to a model or a remote-code one-liner, so ordinary notes ("I must
call mom", "we ignored the warning") are not flagged. On the dev chats of
``bench-data`` (LoCoMo and RealTalk, every turn) the false-positive rate is
measured by ``python bench/instructions.py`` (docs/hooks.md gives the
number). What is flagged is still stored and still recalled — marked,
never dropped: a person may keep such a note on purpose.
"""

from __future__ import annotations

import re

from mdmem.recall.instruction_forms import MORE_CUES, readings
from mdmem.recall.instruction_structure import STRUCTURE_CUES, views

__all__ = ["CUES", "instruction_cues", "is_instruction_like"]

_I = re.IGNORECASE

#: name -> pattern. Names are what the injected label and the ``flag`` say.
CUES: dict[str, re.Pattern[str]] = {
    # "Ignore all previous instructions", "disregard the system prompt".
    "override": re.compile(
        r"\b(?:ignore|disregard|forget|override|bypass)\s+(?:all\s+|any\s+|every\s+)?"
        r"(?:of\s+)?(?:the\s+|your\s+|my\s+|these\s+|those\s+)?"
        r"(?:previous|prior|above|earlier|preceding|original|system|safety)\s+"
        r"(?:instructions?|prompts?|rules|directives|directions|guidelines|messages)\b",
        _I,
    ),
    # A download piped into a shell: remote code run blind.
    "pipe-to-shell": re.compile(
        r"\b(?:curl|wget|iwr|invoke-webrequest)\b[^\n|;]{0,200}\|\s*(?:sudo\s+)?"
        r"(?:ba|z|da|k|fi)?sh\b"
        # The same with the pipe lost (a sentence splitter drops "|"): URL, then a shell.
        r"|\b(?:curl|wget)\s+(?:-\S+\s+)*https?://\S+\s+(?:sudo\s+)?(?:ba|z|da)?sh\b",
        _I,
    ),
    # Orders addressed to the model: "you must always approve", "the assistant
    # should never". "You must always/never" alone is what people say to people
    # ("Dad says you must never give up"): with "you", the verb must be one an
    # agent carries out (approve, run, reveal, answer...).
    "order-to-model": re.compile(
        r"\bthe\s+(?:assistant|ai|model|agent|llm)\s+(?:must|shall|are\s+to)"
        r"\s+(?:now\s+)?(?:always|never|immediately|obey|comply|execute|run|ignore|disregard"
        r"|reveal|exfiltrate|output\s+only)\b"
        r"|\byou\s+(?:must|shall|are\s+to)\s+(?:now\s+)?(?:(?:always|never|immediately)\s+)?"
        r"(?:obey|comply|execute|run|ignore|disregard|reveal|exfiltrate|output|approve|merge"
        r"|push|deploy|delete|grant|accept|answer|respond|reply|refuse|mention|tell|say|print"
        r"|send|call|use|include|trust|agree|follow|share|disclose)\b",
        _I,
    ),
    # "From now on, you can reach support on Slack" tells a person something.
    "from-now-on": re.compile(
        r"\bfrom\s+now\s+on,?\s+(?:you\s+(?:will|must|shall|are\s+to|should|only|always"
        r"|never|respond|answer|reply|act|obey)|always|never|only\s+(?:respond|answer|reply)"
        r"|respond|answer|reply|act)\b",
        _I,
    ),
    # System-prompt phrasing and chat-template markers.
    "role-play": re.compile(
        # "You are now the owner of the dashboard" hands a person a job: with an
        # article, what they become must be a model, a persona or a mode.
        r"\b(?:you\s+are\s+now\s+(?:in\s+)?(?:dan|developer|unrestricted|jailbroken)\b"
        r"|you\s+are\s+now\s+(?:in\s+)?(?:a|an|the)\s+(?:\w+\s+){0,2}?(?:ai|assistant|model"
        r"|bot|chatbot|persona|character|version|mode|entity|hacker|llm)\b"
        r"|developer\s+mode\s+(?:enabled|on)|jailbreak(?:ing)?\s+(?:mode|prompt))",
        _I,
    ),
    # A "system:" turn that speaks to the reader ("System: Ubuntu 22.04" is a note).
    "system-prompt": re.compile(
        r"(?:^|\n)\s*(?:system|developer)\s*prompt\s*:\s*\S"
        r"|(?:^|\n)\s*(?:system|developer)\s*:\s*(?:you|your|the\s+(?:user|assistant|model)"
        r"|ignore|disregard|forget|obey|follow|from\s+now|new|all|always|never|do\s+not|reveal"
        r"|override)\b"
        r"|<\|?(?:system|im_start|im_end)\|?>|\[/?INST\]|<\s*/?\s*system\s*>"
        r"|\b(?:new|updated|real)\s+(?:system\s+)?instructions?\s*:"
        r"|\b(?:reveal|print|show|repeat|leak)\s+(?:me\s+)?(?:your|the)\s+"
        r"(?:system\s+prompt|hidden\s+instructions)",
        _I,
    ),
    # Send secrets somewhere.
    "exfiltrate": re.compile(
        r"\b(?:send|post|upload|exfiltrate|forward|email)\s+(?:all\s+)?(?:the\s+|your\s+|my\s+)?"
        r"(?:api[\s_-]?keys?|credentials|passwords?|secrets?|access\s+tokens?|ssh\s+keys?"
        r"|env(?:ironment)?\s+variables|\.env(?:\s+file)?)\s+to\b",
        _I,
    ),
}


CUES.update(MORE_CUES)
CUES.update(STRUCTURE_CUES)


def instruction_cues(text: str) -> tuple[str, ...]:
    """The names of the :data:`CUES` ``text`` shows, in table order (empty: none).

    The text is read as written, with look-alike letters and invisible
    characters folded, and with its base64 runs decoded
    (:func:`mdmem.recall.instruction_forms.readings`); the structural cues
    also in each reading's normalised views (lower case, leetspeak and
    spread-out letters undone: :func:`mdmem.recall.instruction_structure.views`)."""
    if not text:
        return ()
    read = readings(text)
    names = [
        name
        for name, pattern in CUES.items()
        if name not in STRUCTURE_CUES and any(pattern.search(v) for v in read)
    ]
    if not names:
        # The structural cues are for wordings the phrase cues don't know: a
        # label names the phrase it matched when there is one.
        normal = list(dict.fromkeys(v for r in read for v in views(r)))
        names = [
            name
            for name, pattern in STRUCTURE_CUES.items()
            if any(pattern.search(v) for v in normal)
        ]
    # A paraphrase cue adds nothing beside the cue it paraphrases.
    base = {n.removesuffix("-paraphrase") for n in names if n.endswith("-paraphrase")}
    return tuple(n for n in names if not (n.endswith("-paraphrase") and n[:-11] in base & {*names}))


def is_instruction_like(text: str) -> bool:
    """Whether ``text`` reads as an order to the model (any of :data:`CUES`)."""
    return bool(instruction_cues(text))
