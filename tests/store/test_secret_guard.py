from __future__ import annotations

import random

import pytest

from mdmem.errors import SecretRefusedError
from mdmem.store.secret_guard import guard, refuse_in_metadata, scan, scan_patterns

SECRETS = [
    ("sk-proj-abcdefghijklmnopqrstuvwxyz0123", "OpenAI API key"),
    ("AKIAIOSFODNN7EXAMPLE", "AWS access key"),
    ("ghp_" + "a" * 36, "GitHub token"),
    ("xoxb-1234567890-abcdefghij", "Slack token"),
    ("-----BEGIN OPENSSH PRIVATE KEY-----", "private key"),
    ("password: correcthorsebattery", "password assignment"),
    ("API_KEY=abcdef123456", "password assignment"),
    ("[password:: correcthorsebattery]", "password assignment"),  # a Dataview field
    ("postgres://admin:s3cretpw@db.internal/app", "URL credentials"),
    ("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.abcdefghijklmnop", "JWT"),
    ("AIza" + "B" * 35, "Google API key"),
    ("sk_live_" + "a" * 20, "Stripe key"),
    ("github_pat_" + "a" * 40, "GitHub token"),
    ("ASIA" + "A" * 16, "AWS access key"),
    ("Access-Token = abcdef123456", "password assignment"),
    ("client_secret is zyxwvu987654", "password assignment"),
    ("pa\u017fsword: correcthorsebattery", "password assignment"),  # long s: not ASCII
]


@pytest.mark.parametrize(("text", "kind"), SECRETS)
def test_secrets_are_found_refused_and_redacted(text: str, kind: str) -> None:
    assert kind in {f.kind for f in scan(f"note: {text} end")}
    with pytest.raises(SecretRefusedError):
        guard(f"note: {text} end")
    redacted = guard(f"note: {text} end", "redact")
    assert (
        f"[REDACTED:{kind}]" in redacted
        and redacted.startswith("note: ")
        and redacted.endswith(" end")
    )


@pytest.mark.parametrize(
    "text",
    [
        "The user prefers metric units.",
        "Reset your password in the settings page.",
        "The API key rotation happens monthly.",
        "sk- is a prefix for keys",
        "Deploy token is stored in the vault, not here.",
    ],
)
def test_ordinary_text_passes(text: str) -> None:
    assert guard(text) == text


def test_off_mode_passes_everything() -> None:
    assert guard("password = hunter2hunter2", "off") == "password = hunter2hunter2"


def test_metadata_is_refused_whatever_the_mode() -> None:
    refuse_in_metadata("#deploy [source:: wiki]", "the tags")
    with pytest.raises(SecretRefusedError, match="the tags contain what looks like a secret"):
        refuse_in_metadata("#sk-proj-abcdefghijklmnopqrstuvwxyz0123", "the tags")


def test_the_quick_check_never_skips_a_secret() -> None:
    """scan() skips the patterns for ASCII text without any of their pieces;
    on random mixes of secrets, near misses and prose it finds what the
    patterns alone find."""
    rng = random.Random(11)
    pieces = [
        *(text for text, _ in SECRETS),
        *(text.upper() for text, _ in SECRETS),
        *(text[: len(text) // 2] for text, _ in SECRETS),
        "the deploy ran ",
        "PassPhrase = ",
        "Api-Key: ",
        "x://user:pw@h ",
        " is ",
        "=",
        "caf\u00e9 ",
        "\u212a",
    ]
    hits = 0
    for _ in range(3000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(1, 6)))
        expected = scan_patterns(text)
        assert scan(text) == expected, text
        hits += bool(expected)
    assert 500 < hits < 3000
