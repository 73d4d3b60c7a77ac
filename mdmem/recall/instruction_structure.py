"""The shape of an order to the model, for the instruction-like marker.

The phrase cues (:mod:`mdmem.recall.instructions`,
:mod:`mdmem.recall.instruction_forms`) name the sentences attackers wrote
before; the ones here describe how such a sentence is built, so that a new
wording of it is seen too (issue "Trust where the last wave stopped", item 6):

* an **override**: a verb that sets something aside (ignore, disregard,
  forget, set aside, stop following...) whose object is the reader's
  instructions (rules, guidelines, directives, context, prompt, orders...)
  qualified as theirs or as earlier ("previous", "your", "you were given"),
  or those instructions declared void ("no longer valid", "revoked");
* an **addressed order**: the text names its reader (a vocative "Assistant:",
  "Hey Claude,", "AI reading this", "if you are an AI") and goes on with an
  order or a new task ("your new objective is");
* a **persona switch**: the reader told it is now someone else, or to
  pretend, role-play or act as someone without its limits;
* a **system claim**: a system or operator voice (``{"role": "system"``,
  ``### Instruction:``, "a message from OpenAI", "as your developer") that
  speaks to the reader or changes its rules;
* a **tool order** and an **exfiltration**: an imperative sentence whose
  object is something no note asks for in passing (a secret, the system
  prompt, a home directory, ``~/.ssh``, a named tool) or whose destination
  is outside (a URL, an address, a public gist, "your next reply"), or an
  order to act unseen ("without telling the user");
* the override in other languages, as a verb and an instruction noun of the
  same language close together, rather than as one fixed sentence.

All of it is looked for in :func:`views`: the text folded to lower case and
compatibility forms, with leetspeak digits read as letters, letters spread
out by spaces or dots joined, and hyphens inside words taken out, so
``1gn0re``, ``i g n o r e`` and ``in-struc-tions`` read as written plainly.

The marker stays a hint: what it flags is still stored and recalled, fenced
as data like every memory (the fence is the guarantee). The rules keep to
sentences addressed to a reader or imperative ones with such an object, so a
person's own rules and preferences ("always run make lint", "the user
prefers British English") are not flagged; the false positives are measured
on the dev chats and on ordinary memory texts (``bench/instructions.py``).
"""

from __future__ import annotations

import re
import unicodedata

from mdmem.store.secret_forms import CONFUSABLES, INVISIBLE

__all__ = ["STRUCTURE_CUES", "views"]

_I = re.IGNORECASE

# Look-alikes a Latin word may borrow beyond the guard's table (Cyrillic п for n).
_MORE_CONFUSABLES = {"п": "n", "г": "r", "т": "t", "к": "k", "м": "m", "в": "b"}
_LEET = str.maketrans(
    {"0": "o", "1": "i", "3": "e", "4": "a", "5": "s", "7": "t", "@": "a", "$": "s"}
)
# A word written with leetspeak: letters and digits mixed, at least one letter on each side.
_LEET_WORD = re.compile(r"\b(?=\w*[a-z])(?=\w*[013457])[a-z013457@$]{3,}\b")
# Letters spread out: "i g n o r e", "i.g.n.o.r.e" (four or more single letters).
_SPREAD = re.compile(r"\b(?:[a-z][ .]){3,}[a-z]\b")
_INNER_HYPHEN = re.compile(r"(?<=[a-z])-(?=[a-z])")
_SEPARATORS = re.compile(r"[_\u00a0]")
_WORD = re.compile(r"\w+")


def _latin_word(match: re.Match[str]) -> str:
    word = match.group()
    if not any("a" <= c <= "z" for c in word):
        return word
    return "".join(_MORE_CONFUSABLES.get(c, CONFUSABLES.get(c, c)) for c in word)


def views(text: str) -> list[str]:
    """``text`` as a reader would take it: lower case, compatibility forms and
    look-alike letters folded, invisible characters dropped; then with
    leetspeak read as letters and spread-out letters joined; then with the
    hyphens inside words read as spaces and as nothing. Only the views that
    differ are returned."""
    folded = "".join(ch for ch in unicodedata.normalize("NFKC", text) if ch not in INVISIBLE)
    folded = folded.casefold()
    if not folded.isascii():
        # Look-alikes are folded in words that hold Latin letters: a Russian
        # sentence stays Russian for the other-language cue.
        folded = _WORD.sub(_latin_word, folded)
    folded = _SEPARATORS.sub(" ", folded)
    plain = _LEET_WORD.sub(lambda m: m.group().translate(_LEET), folded)
    plain = _SPREAD.sub(lambda m: m.group().replace(" ", "").replace(".", ""), plain)
    out = [folded]
    for view in (plain, _INNER_HYPHEN.sub(" ", plain), _INNER_HYPHEN.sub("", plain)):
        if view not in out:
            out.append(view)
    return out


# -- pieces ------------------------------------------------------------------------

# Where a clause starts, and the adverbs an order is dressed in.
_START = (
    r"(?:^|(?<=[.!?;:\n,(\[\"'`>-]))\s*"
    r"(?:(?:please|now|immediately|silently|quietly|secretly|just|also|then|and|first|so)\s+)*"
)
_READER = (
    r"(?:ai|a\.i\.|llm|model|language\s+model|assistant|ai\s+assistant|agent|ai\s+agent|bot"
    r"|chatbot|claude|chatgpt|gpt(?:-?\d\w*)?|gemini|copilot|llama|mistral|grok|bard)"
)
_SETS_ASIDE = (
    r"(?:ignore|ignoring|disregard|forget|override|bypass|set\s+aside|put\s+aside|discard|drop"
    r"|abandon|skip|nevermind|never\s+mind|stop\s+(?:following|obeying|using)"
    r"|do\s+not\s+(?:follow|obey)|don'?t\s+(?:follow|obey)|replace|revoke|cancel|suspend"
    r"|throw\s+away|erase|wipe|clear)"
)
_ORDERS = (
    r"(?:instructions?|directions|directives?|rules|guidelines|guidance|polic(?:y|ies)|prompts?"
    r"|context|orders|commands|constraints|restrictions|filters|programming|training"
    r"|configuration|settings|system\s+message|safety\s+(?:rules|checks|measures))"
)
_THEIRS = (
    r"(?:previous|prior|earlier|above|preceding|original|initial|old|existing|current|all|any"
    r"|every|your|these|those|system|safety|content|developer'?s?|the\s+user'?s?|everything)"
)
_VOID = (
    r"(?:no\s+longer\s+(?:valid|apply|applies|in\s+effect|binding)|(?:been\s+)?revoked|void"
    r"|suspended|cancell?ed|lifted|disabled|overridden|superseded|were\s+a\s+test|do\s+not\s+apply)"
)
_SECRETS = (
    r"(?:passwords?|credentials|secrets?|api\s+keys?|access\s+keys?|private\s+keys?|tokens?"
    r"|ssh\s+keys?|~/\.ssh|id_rsa|id_ed25519|\.env\b|environment\s+variables|env\s+vars"
    r"|/etc/(?:shadow|passwd)|system\s+prompt|initial\s+prompt|hidden\s+(?:instructions|prompt"
    r"|configuration|config|rules)|(?:conversation|chat)\s+history|database\s+dump"
    r"|the\s+user'?s\s+(?:data|messages|emails?|files|passwords?|keys?|address(?:es)?))"
)
_OUTSIDE = (
    r"(?:https?://|\b[\w.+-]+@[\w-]+\.[\w.]+|\bpublic\s+(?:gist|repo|repository|paste|url)"
    r"|\bgist\b|\bpastebin\b|\bremote\s+server|\bexternal\s+server|\battacker|\bthis\s+address"
    r"|\byour\s+(?:next\s+)?(?:reply|answer|response|message)|\bend\s+of\s+your\s+answer"
    r"|\bimage\s+url)"
)
_UNSEEN = (
    r"(?:without\s+(?:telling|informing|asking|warning|notifying|alerting|mentioning"
    r"|letting\s+\w+\s+know|(?:any\s+)?(?:confirmation|approval|review))"
    r"|(?:silently|quietly|secretly)\s+\w+|under\s+any\s+circumstances"
    r"|do\s+not\s+(?:mention|tell|reveal|show)\s+(?:this|it|anything)\s+to)"
)
_DANGEROUS = (
    r"(?:rm\s+-\w*r\w*f?\w*\s+(?:~|/|\$home|\*)(?![\w-])[^\s;]*|git\s+push\s+(?:--force|-f)\b"
    r"|/etc/(?:shadow|passwd|sudoers)\b|\bsudo\b.*\bevil|\bthe\s+(?:\w+\s+){1,2}tool\b"
    r"|\b(?:delete|write|read|edit|create)[ _]files?\b"
    r"|\btransfer\s+\$?\d+"
    r"|against\s+production|every\s+file|all\s+(?:local\s+)?(?:branches|files|repos))"
)
_ORDER_VERB = (
    r"(?:run|execute|call|invoke|use|open|add|append|schedule|delete|remove|push|transfer|upload"
    r"|send|post|email|forward|copy|leak|reveal|print|output|dump|tell\s+me|show\s+me|visit"
    r"|read|write|replace|include|share|exfiltrate|paste|install|download|disable|grant|approve"
    r"|list|collect|give\s+me|display|expose|merge|close|deploy|commit|create|update|edit|change"
    r"|modify|rewrite|stop|ignore|disregard|forget|reply|answer|respond|say|tell|give|make"
    r"|switch|turn|set|enable|reset|rename|move)"
)
_AI_BEHAVIOUR = (
    r"(?:refus\w*|restrict\w*|filter\w*|polic(?:y|ies)|guidelines|rules|limits|constraints"
    r"|censor\w*|jailbr\w*|safety|ethic\w*|persona|guardrails|no\s+limits|anything\s+now"
    r"|content\s+policy|warnings?|without\s+refusing)"
)

_W = r"(?:\s+\S+){0,6}?\s+"  # up to six words between two parts

STRUCTURE_CUES: dict[str, re.Pattern[str]] = {
    "override-structure": re.compile(
        rf"\b{_SETS_ASIDE}\s+(?:(?:all|any|every|of|the|my|these|those)\s+)*"
        rf"(?:{_THEIRS}\s+)+(?:\w+\s+)?{_ORDERS}\b"
        rf"|\b{_SETS_ASIDE}\s+(?:all\s+|any\s+|the\s+)*{_ORDERS}\s+(?:you\s+(?:were|have\s+been)"
        rf"\s+(?:given|told|trained)|you\s+(?:received|got|have)|(?:above|before|so\s+far))"
        rf"|\b{_SETS_ASIDE}\s+(?:everything|all|anything)\s+(?:you\s+(?:were|have\s+been)"
        rf"\s+told|(?:that\s+)?(?:was\s+)?said\s+(?:before|above)|above|before|so\s+far)"
        rf"|\b{_SETS_ASIDE}\s+(?:the\s+)?user'?s?\s+(?:question|request|message|instructions?)"
        rf"|\b(?:previous|prior|earlier|original|your|the)\s+(?:\w+\s+)?{_ORDERS}\b[^.!?\n]{{0,40}}?"
        rf"\b(?:(?:are|is|have|has|were)\s+)(?:now\s+)?(?:been\s+)?{_VOID}"
        rf"|\b{_ORDERS}\s+you\s+(?:received|were\s+given)\s+(?:earlier|before|above)[^.!?\n]{{0,20}}?"
        rf"\b(?:are|is)\s+(?:now\s+)?{_VOID}"
        rf"|\bthis\s+(?:memory|note|text|message)\s+(?:outranks|overrides|supersedes|takes"
        rf"\s+precedence\s+over)",
        _I,
    ),
    "addressed-order": re.compile(
        # A vocative naming the reader, then an order, a modal or a new task.
        rf"(?:^|(?<=[.!?\n]))\s*(?:(?:hey|hi|dear|attention|note\s+(?:to|for)|message\s+(?:to"
        rf"|for)|to)\s+)?(?:the\s+|any\s+|an?\s+)?(?:\w+\s+(?=(?:bot|assistant|model|llm|ai)\b))?"
        rf"{_READER}(?:\s+(?:reading|processing|retrieving"
        rf"|that\s+(?:reads|retrieves|processes))\s+this(?:\s+\w+)?)?\s*[:,]\s*"
        rf"(?:[^.!?\n]{{0,40}}?\b(?:you\s+(?:must|should|will|are\s+(?:instructed|ordered"
        rf"|required|to))|your\s+(?:new\s+)?(?:task|objective|job|goal|instructions?)"
        rf"|do\s+not|don'?t|never|stop|please)|\s*{_ORDER_VERB}\b|[^.!?\n]{{0,60}}?\b{_UNSEEN})"
        rf"|\bif\s+(?:you\s+are\s+)?(?:an?\s+|any\s+)?{_READER}\s+(?:is\s+)?(?:reading|processing"
        rf"|retrieving|sees?)\s+this"
        rf"|\b{_READER}s?\s+(?:reading|processing|retrieving)\s+this\b"
        rf"|\b(?:note|message|notice)\s+(?:for|to)\s+(?:any|the|an?)\s+{_READER}\b"
        rf"|\byour\s+(?:new|real|actual|true|only)\s+(?:task|objective|job|goal|purpose|mission"
        rf"|instructions?)\s+(?:is|are|has\s+changed|now)",
        _I | re.MULTILINE,
    ),
    "persona": re.compile(
        rf"\byou\s+are\s+(?:now|no\s+longer)\s+(?:an?\s+)?(?:\w+\s+){{0,3}}?"
        rf"(?:ai|assistant|model|bot|shell|terminal|dan|persona|character|hacker|jailbroken"
        rf"|unfiltered|unrestricted|without)"
        rf"|\b(?:pretend|imagine|simulate|roleplay|role-play|role\s+play|act|behave|respond)\s+"
        rf"(?:as|like|that|to\s+be|you\s+(?:are|have))\b[^.!?\n]{{0,80}}?\b{_AI_BEHAVIOUR}"
        rf"|\b(?:pretend|roleplay|role-play)\s+(?:you\s+are|as|to\s+be)\b[^.!?\n]{{0,60}}?"
        rf"\b(?:password|root\s+access|admin|keys?|secrets?|grant|reveal|share)"
        rf"|\bact\s+as\s+my\s+(?:deceased|late|dead)\s+\w+\s+who"
        rf"|\b(?:switch\s+to|enter|enable|activate|turn\s+on)\s+(?:developer|god|dan|jailbreak"
        rf"|unrestricted|debug|admin)\s+mode\b[^.!?\n]{{0,60}}?\b(?:{_AI_BEHAVIOUR}|print|reveal"
        rf"|secret|answer|respond)"
        rf"|\b(?:from\s+(?:now\s+on|this\s+point(?:\s+forward)?)|for\s+the\s+rest\s+of\s+(?:this"
        rf"|the)\s+(?:chat|conversation|session))\s*,?\s*(?:you\s+(?:will|shall|must|are)"
        rf"|respond|answer|reply|act|behave)\b[^.!?\n]{{0,80}}?\b(?:{_AI_BEHAVIOUR}|ai|model"
        rf"|bot|as\s+an?|pirate|only)"
        rf"|\b(?:in\s+developer\s+mode|jailbroken|without\s+any\s+(?:restrictions|guidelines"
        rf"|filters|limits|rules)|no\s+(?:restrictions|guidelines|ethical\s+constraints"
        rf"|content\s+polic(?:y|ies)))\b",
        _I,
    ),
    "system-claim": re.compile(
        r"(?:^|\n)\s*(?:system|\[system(?:\s+message)?\]|\[admin\]|\[operator\]|\[developer\])"
        r"\s*:?\s*(?:the\s+user|you|your|the\s+assistant|ignore|grant|obey|follow|reveal|new"
        r"|policy|override|all|from\s+now)"
        r"|\"role\"\s*:\s*\"system\""
        r"|^#{2,}\s*(?:instruction|system|new\s+instructions?)\s*:"
        r"|\b(?:begin|start)\s+(?:of\s+)?system\s+prompt\b"
        r"|\b(?:message|notice|update|directive|order)\s+from\s+(?:openai|anthropic|google"
        r"|the\s+(?:developers?|operator|admin(?:istrator)?|system|security\s+team))\b"
        r"[^.!?\n]{0,60}?\b(?:your|you|assistant|policy|restrictions|rules)"
        r"|\bas\s+your\s+(?:developer|creator|operator|administrator|admin|owner|maker)\b"
        r"|\b(?:priority|admin|system|security|operator)\s+(?:override|notice|directive|alert)\b"
        r"[^.!?\n]{0,40}?\b(?:assistant|you\b|this\s+memory|permissions|approvals|system\s+prompt)"
        r"|\b(?:content|safety)\s+polic(?:y|ies)\s+(?:is|are|has\s+been)\s+(?:now\s+)?"
        r"(?:suspended|disabled|lifted|off)",
        _I | re.MULTILINE,
    ),
    "tool-order": re.compile(
        rf"{_START}{_ORDER_VERB}\b[^.!?\n]{{0,80}}?{_DANGEROUS}"
        rf"|{_START}{_UNSEEN}[^.!?\n]{{0,40}}?\b{_ORDER_VERB}\b"
        rf"|{_START}{_ORDER_VERB}\b[^.!?\n]{{0,80}}?\b{_UNSEEN}"
        # "Quietly rewrite the crontab": an order to act unseen, whatever its verb.
        rf"|{_START}(?:silently|quietly|secretly|covertly)\s+(?!\w+ed\b)\w+\s+(?:the|a|an|all"
        rf"|every|my|your|this|these|those|~|/)",
        _I | re.MULTILINE,
    ),
    "exfiltrate-structure": re.compile(
        rf"{_START}(?:{_ORDER_VERB}|exfiltrate)\b[^.!?\n]{{0,60}}?{_SECRETS}[^.!?\n]{{0,80}}?"
        rf"(?:{_OUTSIDE}|\bby\s+printing)"
        rf"|{_START}(?:reveal|leak|print|output|dump|expose|tell\s+me|show\s+me|display|give\s+me)"
        rf"\b[^.!?\n]{{0,30}}?{_SECRETS}",
        _I | re.MULTILINE,
    ),
    "other-language-structure": re.compile(
        "|".join(
            rf"(?:{verbs})[^.!?\n。！？]{{0,40}}?(?:{nouns})"
            for verbs, nouns in (
                # German, French, Spanish, Italian, Portuguese, Dutch
                (
                    r"\bignorier\w*|\bvergiss\b|\bvergess\w*(?![^.!?\n]{0,12}\bnicht\b)|\bmissacht\w*",
                    r"anweisung|instruktion|regeln|vorgaben|richtlinien",
                ),
                (r"\bignore[rz]?\b|\boublie[rz]?\b", r"instructions|consignes|règles|directives"),
                (
                    r"\bignora\w*|\bolvida\w*|\bomite\b|\bdescarta\b",
                    r"instruccion|reglas|indicacion|directrices",
                ),
                (r"\bignora\w*|\bdimentica\w*", r"istruzion|regole|direttive"),
                (
                    r"\bignor[ae]\w*|\besque[çc]a\w*|\bdesconsider\w*",
                    r"instru[çc][õo]es|regras|diretrizes",
                ),
                (r"\bnegeer\w*|\bvergeet\b", r"instructies|regels|richtlijnen"),
                # Polish, Swedish, Turkish, Indonesian/Malay, Vietnamese
                (r"\bzignoruj\w*|\bignoruj\w*|\bzapomnij\b", r"instrukcj|polece|zasad|regu"),
                (r"\bignorera\b|\bglöm\b", r"instruktioner|regler|riktlinjer"),
                (r"talimat\w*|kural\w*", r"yok\s+say|görmezden\s+gel|unut"),
                (r"\babaikan\b|\blupakan\b", r"instruksi|perintah|aturan|arahan"),
                (r"\bbỏ\s+qua\b|\bquên\b", r"hướng\s+dẫn|chỉ\s+dẫn|quy\s+tắc|lệnh"),
                # Russian, Ukrainian
                (
                    r"игнорируй|проигнорируй|забудь|не\s+обращай\s+внимания",
                    r"инструкци|указани|правил|команд",
                ),
                (r"ігноруй|забудь", r"інструкці|вказівк|правил"),
                # Chinese, Japanese, Korean, Arabic, Hindi
                (r"忽略|忘记|忘掉|无视|忽视|不要理会|不要遵守", r"指令|指示|规则|说明|要求"),
                (r"指示|ルール|命令|規則", r"無視|忘れ"),
                (r"지시|규칙|명령|지침", r"무시|잊어"),
                (r"تجاهل|انس|تجاهلي", r"التعليمات|القواعد|الأوامر|الإرشادات"),
                (r"निर्देशों|नियमों|निर्देश", r"अनदेखा|नज़रअंदाज़|नजरअंदाज|भूल"),
            )
        ),
        _I,
    ),
}
