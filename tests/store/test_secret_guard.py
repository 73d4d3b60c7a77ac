from __future__ import annotations

import random
import uuid

import pytest

from mdmem import Vault
from mdmem.errors import InvalidInputError, MdmemError, SecretRefusedError
from mdmem.store.secret_guard import guard, refuse_in_metadata, scan, scrub
from tests.secret_samples import CARDS, FORMATS, PREFIXED, SecretSample, luhn_complete

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


# -- every listed format: refused, redacted whole, never echoed --------------


ALL_FORMATS = [*FORMATS, *CARDS, *PREFIXED]


@pytest.mark.parametrize("sample", ALL_FORMATS, ids=lambda s: s.name)
def test_each_format_is_refused_without_echoing_it(sample: SecretSample) -> None:
    with pytest.raises(SecretRefusedError) as caught:
        guard(sample.text)
    message = str(caught.value)
    assert sample.kind in message and "line " in message and "column " in message
    assert "pass secrets='redact'" in message  # the advice itself is not mistaken for one
    assert not [f for f in sample.fragments if f in message], message
    assert "\n" not in message  # one line


@pytest.mark.parametrize("sample", ALL_FORMATS, ids=lambda s: s.name)
def test_each_format_is_redacted_whole(sample: SecretSample) -> None:
    redacted = guard(sample.text, "redact")
    assert f"[REDACTED:{sample.kind}]" in redacted
    assert not [f for f in sample.fragments if f in redacted], redacted
    # The words around the secret stay.
    first_word = sample.text.split()[0]
    assert redacted.startswith(first_word)
    # Redacting again changes nothing: derived copies may be scrubbed twice.
    assert guard(redacted) == redacted
    assert scrub(redacted, "refuse") == redacted


def test_a_private_key_is_redacted_from_begin_to_end() -> None:
    sample = next(s for s in FORMATS if s.kind == "private key")
    redacted = guard(sample.text, "redact")
    assert redacted == "deploy key:\n[REDACTED:private key]\nrotate it yearly"


def test_a_private_key_without_its_end_line_is_redacted_to_the_end_of_its_body() -> None:
    body = FORMATS[0].fragments  # any text; the key body below is what matters
    assert body
    sample = next(s for s in FORMATS if s.kind == "key material")
    text = "-----BEGIN OPENSSH PRIVATE KEY-----\n" + "\n".join(sample.fragments) + "\nbye now."
    redacted = guard(text, "redact")
    assert redacted == "[REDACTED:private key]\nbye now."


def test_positions_are_those_of_the_original_text() -> None:
    # Zero-width characters are dropped for the scan; the span reported (and
    # redacted) is in the text as given, so nothing of the key is left over.
    key = "ghp_" + "Ab1Cd2Ef3G" + "\u200b" + "h4Ij5Kl6Mn7Op8Qr9St0Uv1Wx2Y"
    text = f"first line\nclone with {key} now"
    [finding] = scan(text)
    assert text[finding.start : finding.end] == key
    assert guard(text, "redact") == "first line\nclone with [REDACTED:GitHub token] now"
    with pytest.raises(SecretRefusedError, match="GitHub token at line 2, column 12"):
        guard(text)


@pytest.mark.parametrize(
    "text",
    [
        "AKIA\u200bIOSF\u200cODNN\u200d7EXA\u2060MPLE",
        "AKIA IOSF ODNN 7EXA MPLE",
        "AKIA\u00a0IOSF\u00a0ODNN\u00a07EXA\u00a0MPLE",  # no-break spaces
        "AKIA\nIOSF\nODNN\n7EXA\nMPLE",
        "\uff21\uff2b\uff29\uff21IOSFODNN7EXAMPLE",  # full-width letters
        "sk-proj-ab\u00adcdefghij\ufeffklmnopqrstu1234",
    ],
)
def test_split_and_disguised_keys_are_found(text: str) -> None:
    findings = scan(f"my key {text} is here")
    assert findings, text
    redacted = guard(f"my key {text} is here", "redact")
    assert "[REDACTED:" in redacted and "ODNN" not in redacted and "klmnop" not in redacted


# -- ordinary text is not a secret --------------------------------------------

_PROSE = [
    "The user prefers metric units.",
    "Reset your password in the settings page.",
    "Reset your password: click the link in the email.",
    "The password is required for every login.",
    "The password was reset yesterday by the admin.",
    "Password: at least 12 characters, one digit.",
    "The API key rotation happens monthly.",
    "sk- is a prefix for keys",
    "Deploy token is stored in the vault, not here.",
    "The secret is consistency and a good night's sleep.",
    "Secret Santa gift exchange is on 2024-12-20.",
    "secret: keep it simple",
    "my key insight: caching matters more than the model",
    "The token limit is 8192 for this model.",
    "tokens: 1500 per request on average",
    "passing tests: 42 of 42",
    "The pass is 3 km long and closed in winter.",
    "password123 is a terrible password",
    "We met at the ASIA PACIFIC CONFERENCE 2024 IN TOKYO.",
    "Use sk-learn (scikit-learn) for the baseline classifier.",
    "Authorization: required for all endpoints except /health.",
    "We use bearer tokens for the public API.",
    "Bearer authentication is configured in the gateway.",
    "The passport number goes into the visa form.",
    "The author is Jane Smith; the secretary is John.",
    "Call hf_hub_download to fetch the weights, or npm_config_registry to set the mirror.",
    "internationalization and Supercalifragilisticexpialidocious are long words",
    "AbstractSingletonProxyFactoryBean is a famous Spring class name.",
    "OPENAI_API_KEY is read from the environment, never from mdmem.toml.",
    "The idempotency key is derived from the request body.",
    "- [ ] rotate the API keys next week #security",
    "The access token expires after 3600 seconds.",
    "Compass: north, then follow the river.",
    "The key file lives at /home/ada/.ssh/id_ed25519.pub on the laptop.",
    "sha256: e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "Color #ff8800 and 0xDEADBEEF in the logs.",
    "Call +1 (555) 010-9999 between 09:00 and 17:00.",
    "Release 2024-06-11T14:32:00Z shipped the new importer.",
    "The secret of release-2024-candidate was the retry loop.",
    "The user said: my password manager is 1Password.",
]
_CODE = [
    "max_tokens=1024",
    "tokenizer = AutoTokenizer.from_pretrained('bert-base-uncased')",
    "password_hash = bcrypt.hashpw(pw, salt)",
    'api_key_env = "OPENAI_API_KEY"',
    "if token == expected_token:",
    "token = tokenizer.encode(text)",
    'secret_key = os.environ["SECRET_KEY"]',
    "password = None",
    "password = getpass.getpass()",
    "client_secret: ${CLIENT_SECRET}",
    "auth_token: <your token here>",
    "headers = {'Authorization': f'Bearer {token}'}",
    "api_key = config.api_key",
    "login(user=user, password=password)",
    "LOG_LEVEL=debug PORT=8080 DATABASE_URL=postgres://localhost/app",
    "PGPASSFILE=~/.pgpass",
    "git log --oneline -n 20 && git push origin main",
    "docker run -p 8080:8080 -v $PWD:/app myimage:latest",
    "export PATH=$HOME/.local/bin:$PATH",
    "const token = await getToken();",
    'cfg = {"model": "gpt-4o-mini", "temperature": 0.2, "max_tokens": 512}',
    "for key, value in settings.items(): print(key, value)",
    "SELECT id, name FROM users WHERE password_reset_at IS NULL;",
    "def check_password(plain: str, hashed: bytes) -> bool:",
    "[status:: superseded] [by:: ^m-01jd3k5x7q]",
    "See [[USER#^m-01jd3k5x7q]] for the preference.",
]
_URLS = [
    "https://github.com/acme/mdmem/pull/123#discussion_r1234567",
    "https://docs.python.org/3/library/re.html#re.Pattern.finditer",
    "https://example.com/search?q=secret+santa&page=2",
    "http://localhost:8080/v1/chat/completions",
    "postgres://db.internal:5432/app",
    "redis://cache.internal:6379/0",
    "ssh://git@github.com/acme/mdmem.git",
    "https://calendar.google.com/calendar/r/week/2024/6/11",
    "https://hooks.example.com/services/deploy",
    "mailto:ada@example.org",
]


def _ordinary_corpus() -> list[str]:
    rng = random.Random(5)
    out = [*_PROSE, *_CODE, *_URLS]
    templates = [
        "Fixed in commit {sha}; the key change was the retry loop.",
        "The key fix landed in {sha} last week.",
        "Request {uuid} failed with a timeout after {n} ms.",
        "idempotency key {uuid} for the payment retry",
        "Memory {mid} supersedes the old preference.",
        "See {url} for the discussion about {word}.",
        "The {word} service restarted at {n}:00 and the {word2} queue drained.",
        "git checkout {short} && git cherry-pick {sha}",
        "Trace {hex32} covers the slow query.",
        "The user likes {word} and {word2}, and asked about {word3} again.",
        "Tag the release {version} and update the changelog for {word}.",
        "sha256 of the artifact is {sha256}",
    ]
    words = [
        "deploy",
        "staging",
        "billing",
        "search",
        "ranking",
        "marketing",
        "budget",
        "coffee",
        "morning",
        "review",
        "database",
        "importer",
        "scheduler",
        "gateway",
        "payments",
        "inbox",
        "calendar",
        "tokenizer",
        "password",
        "secret",
        "keys",
        "tokens",
        "authentication",
        "credentials",
    ]
    for i in range(300):
        template = templates[i % len(templates)]
        out.append(
            template.format(
                sha=f"{rng.getrandbits(160):040x}",
                sha256=f"{rng.getrandbits(256):064x}",
                short=f"{rng.getrandbits(28):07x}",
                hex32=f"{rng.getrandbits(128):032x}",
                uuid=uuid.UUID(int=rng.getrandbits(128), version=4),
                mid="m-01"
                + "".join(rng.choice("0123456789abcdefghjkmnpqrstvwxyz") for _ in range(10)),
                url=rng.choice(_URLS),
                word=rng.choice(words),
                word2=rng.choice(words),
                word3=rng.choice(words),
                n=rng.randrange(10, 5000),
                version=f"v{rng.randrange(1, 9)}.{rng.randrange(0, 30)}.{rng.randrange(0, 9)}",
            )
        )
    return out


# Numbers that are not cards, and words that hold a token format's prefix.
_NUMBERS = [
    "IBAN DE89 3704 0044 0532 0130 00 for the rent",
    "IBAN GB29 NWBK 6016 1331 9268 19, BIC NWBKGB2L",
    "ISBN 978-0-306-40615-7 and ISBN 9780306406157",
    "IMEI 490154203237518 on the old phone",
    "call +1 (555) 010-9999 or +44 20 7946 0958",
    "the order 4111111111111111 shipped on 2024-06-11",  # a card's digits, no card word
    "tracking 1Z999AA10123456784 via UPS",
    "timestamp 1718112345678 ms, nanos 1718112345678901234",
    "Discord user id 123456789012345678 joined",
    "total 1,234,567,890,123.45 EUR in 2024",
    "version 4.1.1.1111.1111.1111 of the firmware",
    "build 20240611.1432 ran 5111 1111 tests",
    "invoice 2024-0611-0001-7788 due 12/29",
    "path /srv/data/4111111111111111/report.csv",
    "ratio 4111/1111/1111/1111 in the table",
    "coordinates 37.7749 -122.4194, elevation 16 m",
    "the card game costs 12 dollars",
    "cvv and expiry are asked on the payment page",
    "I use rapid api dapi docs and multai tools",
    "curl -u $USER:$TOKEN https://ci.internal/api",
    "curl -u user:<password> https://example.com",
    "curl --user admin https://example.com (it prompts for the password)",
    "mexico-city trip, use ico- prefixed icons and pul- lines",
    "sha256~ is how OpenShift prefixes tokens",
    "Q~ is part of an Azure secret's shape",
    "read the ya29. prefix docs",
]


def _numbers_corpus() -> list[str]:
    """_NUMBERS, and one-run numbers that pass the Luhn check by chance but
    stand without a card word (ids, references)."""
    rng = random.Random(9)
    out = list(_NUMBERS)
    for _ in range(200):
        number = luhn_complete(
            rng.choice("3456") + "".join(rng.choice("0123456789") for _ in range(14))
        )
        out.append(
            rng.choice(["ref {}", "id {} assigned", "ticket #{}", "account {} opened"]).format(
                number
            )
        )
    return out


def test_numbers_and_prefix_lookalikes_are_not_secrets() -> None:
    flagged = [(text, [f.kind for f in scan(text)]) for text in _numbers_corpus() if scan(text)]
    assert flagged == []


def test_ordinary_prose_code_ids_and_urls_are_not_secrets() -> None:
    corpus = _ordinary_corpus()
    assert len(corpus) > 350
    flagged = [(text, [f.kind for f in scan(text)]) for text in corpus if scan(text)]
    assert flagged == []
    for text in corpus:
        assert guard(text) == text


def test_off_mode_passes_everything() -> None:
    assert guard("password = hunter2hunter2", "off") == "password = hunter2hunter2"
    assert scrub("password = hunter2hunter2", "off") == "password = hunter2hunter2"


def test_scrub_redacts_whatever_the_guard_would_refuse() -> None:
    text = "db password = hunter2hunter2 for staging"
    assert scrub(text, "refuse") == scrub(text, "redact") == guard(text, "redact")
    assert scrub("ordinary words", "refuse") == "ordinary words"


def test_metadata_is_refused_whatever_the_mode() -> None:
    refuse_in_metadata("#deploy [source:: wiki]", "the tags")
    with pytest.raises(SecretRefusedError, match="the tags contain what looks like a secret"):
        refuse_in_metadata("#sk-proj-abcdefghijklmnopqrstuvwxyz0123", "the tags")


def test_the_quick_check_never_skips_a_secret() -> None:
    """scan() skips the patterns for text without any of their pieces; on
    random mixes of secrets, near misses, disguises and prose it finds what
    the full scan finds."""
    rng = random.Random(11)
    pieces = [
        *(text for text, _ in SECRETS),
        *(text.upper() for text, _ in SECRETS),
        *(text[: len(text) // 2] for text, _ in SECRETS),
        *(s.text for s in ALL_FORMATS),
        *(s.text[: len(s.text) // 2] for s in ALL_FORMATS),
        "the deploy ran ",
        "PassPhrase = ",
        "Api-Key: ",
        "x://user:pw@h ",
        " is ",
        "=",
        " ",
        "\n",
        "\u200b",
        "caf\u00e9 ",
        "\u212a",
        "\uff53\uff4b-",
    ]
    hits = 0
    for _ in range(1500):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(1, 6)))
        expected = scan(text, quick=False)
        assert scan(text) == expected, text
        hits += bool(expected)
    assert 300 < hits < 1500


# -- error messages never carry a secret -------------------------------------

_TOKEN = "ghp_" + "Ab1Cd2Ef3Gh4Ij5Kl6Mn7Op8Qr9St0Uv1Wx2Y"
_ASSIGNED = "password=Tr0ub4dor&3"


@pytest.mark.parametrize(
    "call",
    [
        lambda v: v.remember("deploy notes", tags=[_ASSIGNED]),
        lambda v: v.remember("deploy notes", tags=[_TOKEN + "x" * 40]),
        lambda v: v.log("rotated", category=_ASSIGNED),
        lambda v: v.remember("deploy notes", kind=_ASSIGNED),
        lambda v: v.remember("deploy notes", scope="user:" + _ASSIGNED),
        lambda v: v.remember("deploy notes", fields=[(_ASSIGNED, "v")]),
        lambda v: v.remember("deploy notes", created=_ASSIGNED),
        lambda v: v.recall("deploy", since=_ASSIGNED),
        lambda v: v.get(_TOKEN),
        lambda v: v.forget(_TOKEN),
        lambda v: v.history(_TOKEN),
        lambda v: v.remember(f"my token {_TOKEN}"),
    ],
    ids=[
        "tag", "long tag", "category", "kind", "scope", "field", "created", "since", "get",
        "forget", "history", "text",
    ],
)  # fmt: skip
def test_error_messages_never_echo_a_secret(vault: Vault, call: object) -> None:
    assert callable(call)
    with pytest.raises(MdmemError) as caught:
        call(vault)
    assert isinstance(caught.value, InvalidInputError)
    for shown in (str(caught.value), repr(caught.value), *map(str, caught.value.args)):
        assert _TOKEN not in shown and "Tr0ub4dor" not in shown, shown
