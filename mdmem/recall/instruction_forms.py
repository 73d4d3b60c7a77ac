"""More ways an order to the model is written, for the instruction-like marker.

:mod:`mdmem.recall.instructions` holds the original cues (English phrasing,
chat-template markers, remote-code one-liners). This module adds what an
attacker rewrites them into (issue #33, item 5), measured on
``bench/data/injections.json`` by ``python bench/instructions.py --set``:

* paraphrases of an override ("pay no attention to the earlier
  instructions", "your previous instructions are void"), orders kept from the
  user ("do not tell the user"), text addressed to an AI reader;
* the override and "from now on" in other languages (German, French,
  Spanish, Italian, Portuguese, Dutch, Polish, Russian, Ukrainian, Chinese,
  Japanese, Korean, Turkish, Swedish);
* :func:`readings`: the text with look-alike letters and invisible
  characters folded, and each base64 run decoded, so the cues are looked for
  in what a model would read.

The marker stays a hint (the fence around every injected memory is the
guarantee): each cue needs a phrase rarely anything but an order to a model,
and none may flag a turn of the dev chats.
"""

from __future__ import annotations

import base64
import binascii
import re
import unicodedata

from mdmem.store.secret_forms import CONFUSABLES, INVISIBLE

__all__ = ["MORE_CUES", "readings"]

_I = re.IGNORECASE
_QUAL = (
    r"(?:previous|prior|above|earlier|preceding|original|old|initial|system|safety|your|all"
    r"|any|every|the\s+(?:previous|prior|earlier|above|system|developer'?s?))"
)
_RULES = r"(?:instructions?|prompts?|rules|directives|directions|guidance|guidelines|messages?)"
_AI = r"(?:ai|a\.i\.|llm|model|assistant|agent|ai\s+agent|chatbot|language\s+model|bot)"

MORE_CUES: dict[str, re.Pattern[str]] = {
    "override-paraphrase": re.compile(
        rf"\b(?:ignore|disregard|forget|override|bypass|cancel|drop|discard|abandon"
        rf"|stop\s+following|pay\s+no\s+attention\s+to)\s+(?:all\s+|any\s+)?(?:of\s+)?"
        rf"(?:{_QUAL}\s+)+(?:of\s+)?(?:your\s+|the\s+)?{_RULES}\b"
        rf"|\b(?:ignore|disregard|forget)\s+(?:everything|all)\s+(?:you\s+were\s+(?:told|given)"
        rf"|above|before|(?:that\s+)?the\s+user\s+said)"
        rf"|\b(?:ignore|disregard)\s+what\s+the\s+user\s+(?:said|asked|wants)"
        rf"|\b(?:ignore|disregard)\s+the\s+{_RULES}\s+you\s+were\s+given"
        rf"|\b(?:previous|prior|earlier|old|your)\s+{_RULES}\s+(?:are|is)\s+(?:now\s+)?"
        rf"(?:void|cancell?ed|obsolete|revoked|invalid)"
        rf"|\b(?:previous|prior|earlier)\s+{_RULES}\s+no\s+longer\s+appl"
        rf"|\bforget\s+your\s+{_RULES}"
        rf"|\bthe\s+real\s+(?:instructions|task)\s+(?:are|is)\b"
        rf"|\btreat\s+this\s+(?:memory|note|message|text)\s+as\s+(?:your|the)\s+"
        rf"(?:highest|top|first)[\s-]priority"
        rf"|^\s*override\s*:"
        rf"|\bauthori[sz]ed\s+you\s+to\s+(?:skip|bypass|ignore|disable|override)",
        _I | re.MULTILINE,
    ),
    "hidden-from-user": re.compile(
        r"\b(?:do\s+not|don't|never)\s+(?:tell|inform|warn|mention\s+(?:this|it)\s+to)"
        r"\s+the\s+user\b|\bwithout\s+(?:telling|informing|asking|warning)\s+the\s+user\b"
        r"|\bmust\s+not\s+mention\s+this\s+(?:note|memory|message|instruction)",
        _I,
    ),
    "addressed-to-ai": re.compile(
        rf"\b(?:note\s+to|attention|message\s+(?:for|to)|dear|hey)\s+(?:the\s+|any\s+)?{_AI}\s*[:,]"
        rf"|\bif\s+you\s+are\s+an?\s+{_AI}\s+reading\s+this"
        rf"|^\s*{_AI}\s*,\s*(?:please\s+)?(?:ignore|disregard|forget|reveal|run|execute)\b"
        rf"|\bact\s+as\s+an?\s+(?:unfiltered|unrestricted|uncensored|jailbroken)\b",
        _I | re.MULTILINE,
    ),
    "other-language": re.compile(
        "|".join(
            [
                # German
                r"\b(?:ignorier|vergiss|missachte)\w*\s+(?:alle\s+)?(?:vorherigen|bisherigen"
                r"|früheren|vorigen)\s+(?:anweisungen|instruktionen|regeln)",
                r"\bab\s+jetzt\s+(?:befolgst|gehorchst|musst)\s+du\b",
                # French
                r"\b(?:ignore|oublie)\w*\s+(?:toutes\s+)?(?:les\s+)?instructions\s+"
                r"(?:précédentes|antérieures)",
                r"\bà\s+partir\s+de\s+maintenant,?\s+tu\s+dois\b",
                # Spanish
                r"\b(?:ignora|olvida)\w*\s+(?:todas\s+)?(?:las\s+)?instrucciones\s+"
                r"(?:anteriores|previas)",
                r"\ba\s+partir\s+de\s+ahora,?\s+debes\b",
                # Italian
                r"\b(?:ignora|dimentica)\w*\s+(?:tutte\s+)?(?:le\s+)?istruzioni\s+precedenti",
                # Portuguese
                r"\b(?:ignore|esqueça|esqueca)\s+(?:todas\s+)?(?:as\s+)?instruções\s+anteriores",
                # Dutch, Polish, Swedish, Turkish
                r"\bnegeer\s+(?:alle\s+)?(?:vorige|eerdere)\s+instructies",
                r"\bzignoruj\s+(?:wszystkie\s+)?poprzednie\s+instrukcje",
                r"\bignorera\s+(?:alla\s+)?tidigare\s+instruktioner",
                r"\bönceki\s+(?:tüm\s+)?talimatları\s+(?:yok\s+say|görmezden\s+gel)",
                # Russian, Ukrainian
                r"(?:игнорируй|забудь|проигнорируй)\s+(?:все\s+)?предыдущие\s+"
                r"(?:инструкции|указания)",
                r"(?:ігноруй|забудь)\s+(?:усі\s+|всі\s+)?попередні\s+(?:інструкції|вказівки)",
                # Chinese, Japanese, Korean
                r"(?:忽略|忘记|无视|忽视)(?:之前|以前|先前|上面|前面)的?(?:所有)?(?:指令|指示|说明)",
                r"(?:以前|これまで|前|上記)の指示を(?:すべて|全て)?(?:無視|忘れ)",
                r"이전의?\s*(?:모든\s*)?지시(?:를|사항을)?\s*무시",
            ]
        ),
        _I,
    ),
}

_B64_RUN = re.compile(r"(?<![A-Za-z0-9+/])[A-Za-z0-9+/]{20,}={0,2}(?![A-Za-z0-9+/=])")
_ODD = re.compile("[" + INVISIBLE + "".join(CONFUSABLES) + "]")


def readings(text: str) -> list[str]:
    """``text`` as written, and as a model would read it: invisible characters
    dropped and look-alike letters folded (in words that mix scripts), each
    base64 run decoded."""
    views = [text]
    if _ODD.search(text):
        views.append(_fold(text))
    for run in _B64_RUN.findall(text):
        decoded = _decode(run)
        if decoded:
            views.append(decoded)
    return views


def _fold(text: str) -> str:
    words = []
    for word in re.split(r"(\s+)", text):
        word = "".join(ch for ch in word if ch not in INVISIBLE)
        if any("a" <= ch.lower() <= "z" for ch in word):  # a Latin word with look-alikes in it
            word = "".join(CONFUSABLES.get(ch, ch) for ch in word)
        words.append(unicodedata.normalize("NFKC", word))
    return "".join(words)


def _decode(run: str) -> str:
    """The run decoded, when it is base64 of readable text; "" otherwise."""
    try:
        raw = base64.b64decode(run + "=" * (-len(run) % 4), validate=True)
        text = raw.decode("utf-8")
    except (binascii.Error, ValueError):
        return ""
    printable = sum(ch.isprintable() or ch.isspace() for ch in text)
    return text if text and printable >= 0.95 * len(text) and " " in text else ""
