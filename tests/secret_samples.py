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

__all__ = ["CARDS", "FORMATS", "PREFIXED", "SecretSample", "luhn_complete", "pem_body_lines"]

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
    card = luhn_complete("4" + "".join(_rng.choice(string.digits) for _ in range(14)))
    grouped = " ".join(card[i : i + 4] for i in range(0, 16, 4))
    code = "".join(_rng.choice(string.digits) for _ in range(3))
    add(
        "card number with expiry and CVV",
        f"paid with card {grouped} exp 12/29 cvv {code} for the hotel",
        "card number",
        card[4:],
        *grouped.split()[1:],
        f"cvv {code}",
    )
    return out


def luhn_complete(partial: str) -> str:
    """``partial`` with the check digit that makes it pass the Luhn check."""
    for check in string.digits:
        digits = partial + check
        total = 0
        for i, ch in enumerate(reversed(digits)):
            d = int(ch) * (2 if i % 2 else 1)
            total += d - 9 if d > 9 else d
        if total % 10 == 0:
            return digits
    raise AssertionError("unreachable: one check digit always fits")


def _cards() -> list[SecretSample]:
    """A card of each brand and layout, in the ways people write them."""
    out: list[SecretSample] = []

    def digits(n: int) -> str:
        return "".join(_rng.choice(string.digits) for _ in range(n))

    def card(prefix: str, length: int) -> str:
        return luhn_complete(prefix + digits(length - len(prefix) - 1))

    visa, master, master2 = card("4", 16), card("53", 16), card("2221", 16)
    amex, discover, jcb = card("37", 15), card("6011", 16), card("3530", 16)
    diners, unionpay, visa19 = card("36", 14), card("62", 17), card("4", 19)
    code = digits(3)
    for name, text, number in (
        ("Visa, grouped, no context", f"{visa[:4]} {visa[4:8]} {visa[8:12]} {visa[12:]}", visa),
        (
            "Mastercard with dashes",
            "mc " + "-".join(master[i : i + 4] for i in (0, 4, 8, 12)),
            master,
        ),
        ("Mastercard 2-series, one run, card word", f"the card is {master2} ok", master2),
        ("Amex 4-6-5", f"amex {amex[:4]} {amex[4:10]} {amex[10:]} cid", amex),
        ("Discover, one run, expiry after it", f"{discover} 03/27", discover),
        ("JCB, one run, CVV after it", f"jcb {jcb} cvc {code}", jcb),
        ("Diners 4-6-4", f"{diners[:4]} {diners[4:10]} {diners[10:]}", diners),
        ("UnionPay 17 digits, debit word", f"debit {unionpay}", unionpay),
        ("Visa 19 digits grouped", " ".join(visa19[i : i + 4] for i in range(0, 19, 4)), visa19),
    ):
        out.append(SecretSample(name, f"note: {text} end", "card number", (number[4:],)))
    return out


def _prefixed() -> list[SecretSample]:
    """One token of each format of mdmem.store.secret_rules, and curl -u."""
    out: list[SecretSample] = []
    hexd, lower = "0123456789abcdef", string.ascii_lowercase + string.digits
    upper = string.ascii_uppercase + string.digits
    bech = "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L"

    def add(kind: str, token: str, secret_from: int) -> None:
        # the part after the vendor's prefix is what must never be stored
        out.append(SecretSample(kind, f"use {token} for the job", kind, (token[secret_from:],)))

    add("DigitalOcean token", "dop_v1_" + _pick(hexd, 64), 7)
    add("Alibaba Cloud key", "LTAI" + _pick(_ALNUM, 20), 4)
    add("Azure AD client secret", _pick(_ALNUM, 3) + "8Q~" + _pick(_ALNUM + "_~.-", 34), 5)
    add("Google OAuth client secret", "GOCSPX-" + _pick(_URLSAFE, 28), 7)
    add("Google OAuth token", "ya29." + _pick(_URLSAFE, 120), 5)
    add("HashiCorp Vault token", "hvs." + _pick(_URLSAFE, 95), 4)
    add("Terraform Cloud token", _pick(_ALNUM, 14) + ".atlasv1." + _pick(_URLSAFE, 67), 23)
    add("Fly.io token", "fo1_" + _pick(_URLSAFE, 43), 4)
    add("Doppler token", "dp.pt." + _pick(_ALNUM, 43), 6)
    add("PlanetScale token", "pscale_tkn_" + _pick(_ALNUM, 43), 11)
    add("Pulumi token", "pul-" + _pick(hexd, 40), 4)
    add("Databricks token", "dapi" + _pick(hexd, 32), 4)
    add("OpenShift token", "sha256~" + _pick(_URLSAFE, 43), 7)
    add("age secret key", "AGE-SECRET-KEY-1" + "".join(_rng.choice(bech) for _ in range(58)), 16)
    add("1Password token", "ops_eyJ" + _pick(_B64, 260), 7)
    add("Atlassian token", "ATATT3" + _pick(_URLSAFE, 186), 6)
    add("Linear key", "lin_api_" + _pick(_ALNUM, 40), 8)
    add("Postman key", f"PMAK-{_pick(hexd, 24)}-{_pick(hexd, 34)}", 5)
    add("Prefect key", "pnu_" + _pick(_ALNUM, 36), 4)
    add("RubyGems key", "rubygems_" + _pick(hexd, 48), 9)
    add("ReadMe key", "rdme_" + _pick(lower, 70), 5)
    add("HuggingFace token", "api_org_" + _pick(string.ascii_letters, 34), 8)
    add("Grafana token", f"glsa_{_pick(_ALNUM, 32)}_{_pick(hexd, 8)}", 5)
    add("Sentry token", "sntryu_" + _pick(hexd, 64), 7)
    add("New Relic key", "NRAK-" + _pick(upper, 27), 5)
    add("Dynatrace token", f"dt0c01.{_pick(_ALNUM, 24)}.{_pick(_ALNUM, 64)}", 7)
    add("Shopify token", "shpat_" + _pick(hexd, 32), 6)
    add("Square token", "sq0atp-" + _pick(_URLSAFE, 22), 7)
    add("Stripe key", "rk_prod_" + _pick(_ALNUM, 24), 8)
    add("EasyPost key", "EZAK" + _pick(_ALNUM, 54), 4)
    add("Sendinblue key", f"xkeysib-{_pick(hexd, 64)}-{_pick(_ALNUM, 16)}", 8)
    add("Facebook token", "EAAC" + _pick(_ALNUM, 120), 4)
    add("Slack token", f"xapp-1-A{_pick(upper, 10)}-{_rng.randrange(10**12)}-{_pick(lower, 64)}", 7)
    add(
        "Discord webhook",
        f"https://discord.com/api/webhooks/{_rng.randrange(10**17, 10**18)}/{_pick(_URLSAFE, 68)}",
        52,
    )
    guid = lambda: str(__import__("uuid").UUID(int=_rng.getrandbits(128)))  # noqa: E731
    add(
        "Microsoft Teams webhook",
        f"https://acme.webhook.office.com/webhookb2/{guid()}@{guid()}"
        f"/IncomingWebhook/{_pick(hexd, 32)}/{guid()}",
        41,
    )
    password = _pick(_ALNUM, 12)
    out.append(
        SecretSample(
            "curl credentials",
            f"ran curl -u deploy:{password} https://ci.internal/api",
            "curl credentials",
            (password,),
        )
    )
    return out


FORMATS = _samples()
CARDS = _cards()
PREFIXED = _prefixed()
