"""Fake secrets in the formats the guard must catch, made up at run time.

Each is random (a fixed seed, so a failure reproduces) and built here rather
than written into the repository, so that no scanner mistakes the test suite
for a leak. ``fragments`` are the pieces that must never be stored: a
redaction that left any of them behind would still leak the secret.
"""

from __future__ import annotations

import base64
import random
import string
from dataclasses import dataclass

__all__ = ["FORMATS", "SecretSample", "pem_body_lines"]

_rng = random.Random(20240611)
_ALNUM = string.ascii_letters + string.digits
_B64 = _ALNUM + "+/"
_URLSAFE = _ALNUM + "-_"


def _classes(value: str) -> int:
    return sum(
        (
            any(c.isupper() for c in value),
            any(c.islower() for c in value),
            any(c.isdigit() for c in value),
        )
    )


def _pick(alphabet: str, n: int) -> str:
    """Random characters from ``alphabet``, mixing its kinds as a real key does."""
    while True:
        value = "".join(_rng.choice(alphabet) for _ in range(n))
        if _classes(value) >= min(2, _classes(alphabet)):
            return value


@dataclass(frozen=True)
class SecretSample:
    name: str
    text: str  # a memory holding the secret, with ordinary words around it
    kind: str  # what the guard calls it (named in errors and redactions)
    fragments: tuple[str, ...]  # pieces of the secret, none of which may be stored


def pem_body_lines(seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    body = base64.b64encode(bytes(rng.randrange(256) for _ in range(900))).decode()
    return [body[i : i + 64] for i in range(0, len(body), 64)]


def _samples() -> list[SecretSample]:
    out: list[SecretSample] = []

    def add(name: str, text: str, kind: str, *fragments: str) -> None:
        out.append(SecretSample(name, text, kind, fragments))

    aws_secret = _pick(_B64, 40)
    add(
        "aws secret access key line",
        f"staging creds: aws_secret_access_key = {aws_secret}",
        "AWS secret key",
        aws_secret,
    )
    team, bot, token = (
        "T" + _pick(string.ascii_uppercase + string.digits, 8),
        "B" + _pick(string.ascii_uppercase + string.digits, 10),
        _pick(_ALNUM, 24),
    )
    add(
        "Slack webhook URL",
        f"alerts post to https://hooks.slack.com/services/{team}/{bot}/{token} every hour",
        "Slack webhook",
        f"{team}/{bot}",
        token,
    )
    password = _pick(_ALNUM, 10) + "#" + _pick(string.digits, 2)
    add(
        "DB_PASSWORD env line",
        f"the .env for billing has DB_PASSWORD={password}",
        "password assignment",
        password,
    )
    bearer = _pick(_ALNUM, 18) + "." + _pick(_URLSAFE, 24)
    add(
        "Authorization Bearer header",
        f"call it with curl -H 'Authorization: Bearer {bearer}' on the v2 API",
        "Authorization header",
        bearer,
    )
    redis_pw = _pick(_ALNUM, 16)
    add(
        "URL credentials with an empty user",
        f"the cache lives at redis://:{redis_pw}@cache.internal:6379/0 now",
        "URL credentials",
        redis_pw,
    )
    twilio = "SK" + "".join(_rng.choice("0123456789abcdef") for _ in range(32))
    add("Twilio SK key", f"twilio api key {twilio} for sms", "Twilio key", twilio[2:])
    sendgrid = f"SG.{_pick(_URLSAFE, 22)}.{_pick(_URLSAFE, 43)}"
    add("SendGrid key", f"mail goes out through {sendgrid} today", "SendGrid key", sendgrid[3:])
    hf = "hf_" + _pick(string.ascii_letters, 34)
    add("HuggingFace token", f"pull the model with {hf} please", "HuggingFace token", hf[3:])
    glpat = "glpat-" + _pick(_ALNUM, 20)
    add("GitLab token", f"the CI clones with {glpat} from gitlab", "GitLab token", glpat[6:])
    npm = "npm_" + _pick(_ALNUM, 36)
    add("npm token", f"publish using {npm} on release day", "npm token", npm[4:])
    azure = _pick(_B64, 86) + "=="
    add(
        "Azure AccountKey",
        "blob store: DefaultEndpointsProtocol=https;AccountName=acme;"
        f"AccountKey={azure};EndpointSuffix=core.windows.net",
        "Azure storage key",
        azure[:40],
        azure[40:],
    )
    telegram = f"{_rng.randrange(10**8, 10**9)}:AA{_pick(_URLSAFE, 33)}"
    add("Telegram bot token", f"the bot answers via {telegram} ok", "Telegram bot token", telegram)
    lines = pem_body_lines()
    add(
        "PEM body without its header",
        "pasted from the server:\n" + "\n".join(lines) + "\nthat was the deploy key",
        "key material",
        *lines,
    )
    add(
        "PEM private key, whole block",
        "deploy key:\n-----BEGIN RSA PRIVATE KEY-----\n"
        + "\n".join(pem_body_lines(8))
        + "\n-----END RSA PRIVATE KEY-----\nrotate it yearly",
        "private key",
        *pem_body_lines(8),
    )
    openai = "sk-proj-" + _pick(_ALNUM, 40)
    zero_width = openai[:20] + "\u200b" + openai[20:34] + "\u2060" + openai[34:]
    add(
        "OpenAI key with zero-width characters inside",
        f"the openai key is {zero_width} for prod",
        "OpenAI API key",
        openai[8:20],
        openai[20:34],
        openai[34:],
    )
    soft = "ghp_" + _pick(_ALNUM, 36)
    add(
        "GitHub token with a soft hyphen and a BOM inside",
        f"clone with {soft[:14]}\u00ad{soft[14:30]}\ufeff{soft[30:]} today",
        "GitHub token",
        soft[4:14],
        soft[14:30],
        soft[30:],
    )
    akia = "AKIA" + _pick(string.ascii_uppercase + "234567", 16)
    grouped = " ".join(akia[i : i + 4] for i in range(0, 20, 4))
    add(
        "AWS key id split by spaces",
        f"the access key id is {grouped} in us-east-1",
        "AWS access key",
        grouped[5:],
        akia[4:],
    )
    wrapped = "ghp_" + _pick(_ALNUM, 36)
    add(
        "GitHub token wrapped over two lines",
        f"token: {wrapped[:22]}\n{wrapped[22:]}\nuse it for the mirror",
        "GitHub token",
        wrapped[4:22],
        wrapped[22:],
    )
    return out


FORMATS = _samples()
