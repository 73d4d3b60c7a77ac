"""Every stored string passes one guard, in every form (issue "Trust where the
last wave stopped", item 1).

* Credentials in a command line's own syntax are found and redacted whole,
  the rest of the command kept; ordinary commands (``data/shell_commands.txt``)
  hold none.
* A token or a card given as a tag, a field name or value or a scope name,
  grouped, ``#``-prefixed, lower-cased, split by any separator, is refused
  in every mode, through ``Vault.remember``.
* A Bash call a host reports (Claude Code's and Codex's recorded payload
  shapes) with a credential in its command is captured redacted: not in any
  vault file, file name, git object or state file.

Secrets are made at run time from random pieces (a fixed seed), never written here.
"""

from __future__ import annotations

import random
import string
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from mdmem import Vault
from mdmem.errors import InvalidInputError, SecretRefusedError
from mdmem.hookkit.policy import Policy
from mdmem.hookkit.runner import run_event
from mdmem.store.secret_guard import guard, scan
from tests.conftest import git
from tests.hookkit.test_runner import last_log, payload
from tests.secret_samples import luhn_complete

_rng = random.Random(5150)
_ALNUM = string.ascii_letters + string.digits


def _pick(n: int, alphabet: str = _ALNUM) -> str:
    while True:
        value = "".join(_rng.choice(alphabet) for _ in range(n))
        if any(c.isdigit() for c in value) and (
            alphabet != _ALNUM
            or (any(c.isupper() for c in value) and any(c.islower() for c in value))
        ):
            return value


PW = _pick(14)  # a password as people make them: letters and digits
GH = "ghp_" + _pick(36)
AWS_ID = "AKIA" + _pick(16, string.ascii_uppercase + "234567")
CARD = luhn_complete("4539" + "".join(_rng.choice(string.digits) for _ in range(11)))
GH_BODY = GH[4:]

# (command, a piece of the secret as written there, which must go)
COMMANDS: dict[str, tuple[str, str]] = {
    "PGPASSWORD": (f"PGPASSWORD={PW} psql -h db.internal -U app app", PW),
    "PGPASSWORD quoted, env": (f"env PGPASSWORD='{PW}' pg_dump -Fc app > app.dump", PW),
    "AWS_SECRET_ACCESS_KEY": (f"AWS_SECRET_ACCESS_KEY={PW}{PW} aws s3 ls", PW),
    "export TOKEN": (f"export TOKEN={PW} && ./deploy.sh", PW),
    "MYSQL_PWD": (f"MYSQL_PWD={PW} mysql -u root shop", PW),
    "mysql -p attached": (f"mysql -h db -P 3306 -u app -p{PW} shop", PW),
    "mysql -p quoted": (f"mysqldump -uroot -p'{PW}' --all-databases", PW),
    "mysql --password space": (f"mysql -u root --password {PW} shop", PW),
    "sshpass -p": (f"sshpass -p {PW} ssh deploy@staging", PW),
    "sshpass -p attached": (f"sshpass -p'{PW}' scp app.tar.gz deploy@staging:", PW),
    "docker login -p": (f"docker login -u bob -p {PW} registry.example.com", PW),
    "docker login --password": (f"docker login --username bob --password {PW} ghcr.io", PW),
    "echo into --password-stdin": (f"echo {PW} | docker login -u bob --password-stdin", PW),
    "redis-cli -a": (f"redis-cli -h cache -p 6379 -a {PW} ping", PW),
    "redis-cli -a quoted": (f"redis-cli -a '{PW}' --no-auth-warning info", PW),
    "curl -u": (f"curl -u admin:{PW} https://api.example.com/v1/items", PW),
    "curl bearer header": (f'curl -H "Authorization: Bearer {PW}{PW}" https://x.example', PW),
    "URL userinfo": (f"git clone https://bob:{PW}@git.example.com/team/app.git", PW),
    "URL token as user": (f"git clone https://{PW}{PW}@git.example.com/app.git", PW),
    "here-string after login": (f"vault login - <<< {PW}", PW),
    "here-string random": (f'some-tool --stdin <<< "{PW}"', PW),
    "sqlcmd -P": (f"sqlcmd -S db -U sa -P {PW} -Q 'select 1'", PW),
    "ldapsearch -w": (f"ldapsearch -x -D cn=admin,dc=ex -w {PW} -b dc=ex", PW),
    "smbclient -U user%pw": (f"smbclient //srv/share -U bob%{PW}", PW),
    "htpasswd -b": (f"htpasswd -b .htpasswd bob {PW}", PW),
    "token in quotes over two lines": (
        f'export API_TOKEN="{PW}\n{PW[::-1]}"\n./deploy.sh',
        PW[::-1],
    ),
    "GitHub token in quotes over two lines": (
        f'curl -H "Authorization: token {GH[:20]}\n{GH[20:]}" https://api.github.com/user',
        GH[20:],
    ),
    "token with a backslash continuation": (f'echo "{GH[:22]}\\\n{GH[22:]}" > token', GH[22:]),
}


@pytest.mark.parametrize("name", COMMANDS)
def test_each_command_form_is_found_and_redacted_whole(name: str) -> None:
    command, piece = COMMANDS[name]
    assert scan(command), name
    redacted = guard(command, "redact")
    assert "[REDACTED:" in redacted
    assert piece not in redacted and piece[:8] not in redacted, redacted
    assert redacted.split()[0] == command.split()[0] or command.startswith(("PG", "AWS", "MYSQL"))


def _shell_corpus() -> list[str]:
    path = Path(__file__).parent / "data" / "shell_commands.txt"
    lines = path.read_text(encoding="utf-8").splitlines()
    return [line for line in lines if line.strip() and not line.startswith("## ")]


def test_ordinary_shell_commands_hold_no_secret() -> None:
    corpus = _shell_corpus()
    assert len(corpus) >= 300
    flagged = [(line, [f.kind for f in scan(line)]) for line in corpus if scan(line)]
    assert flagged == []


# -- names and fields through the API ------------------------------------------


def _stored(vault: Vault) -> bytes:
    """Every vault file and file name, every git object, every state file and its name."""
    out = []
    for path in vault.root.rglob("*"):
        out.append(str(path.relative_to(vault.root)).encode())
        if path.is_file() and ".git" not in path.parts:
            out.append(path.read_bytes())
    out.append(
        subprocess.run(
            ["git", "cat-file", "--batch-all-objects", "--batch"],
            cwd=vault.root,
            capture_output=True,
            check=True,
        ).stdout
    )
    out.append(
        subprocess.run(
            ["git", "log", "--all", "--format=%B"], cwd=vault.root, capture_output=True
        ).stdout
    )
    state = vault.admin.state_dir
    for path in state.rglob("*"):
        out.append(str(path.relative_to(state)).encode())
        if path.is_file():
            out.append(path.read_bytes())
    return b"\n".join(out).lower()


def _gone(vault: Vault, *pieces: str) -> list[str]:
    stored = _stored(vault)
    return [p for p in pieces if p.lower().encode() in stored]


_DASHED = "-".join(GH[i : i + 4] for i in range(0, 40, 4))
_SLASHED_CARD = "/".join(CARD[i : i + 4] for i in range(0, 16, 4))
# (what the caller passes, a piece of the secret to look for in what is stored)
NAMES = {
    "GitHub token as a tag": ({"tags": [GH]}, GH_BODY[8:24]),
    "GitHub token as an upper-case tag": ({"tags": [GH.upper()]}, GH_BODY[8:24]),
    "GitHub token in dash groups as a tag": ({"tags": [_DASHED]}, _DASHED[10:30]),
    "GitHub token as a '#tag' in a tag string": ({"tags": f"ops #{GH}"}, GH_BODY[8:24]),
    "AWS key id as a tag (stored lower case)": ({"tags": [AWS_ID]}, AWS_ID[4:]),
    "AWS key id as a field name": ({"fields": [(AWS_ID, "x")]}, AWS_ID[4:]),
    "GitHub token as a field value": ({"fields": [("ref", GH)]}, GH_BODY[8:24]),
    "GitHub token grouped as a field value": (
        {"fields": [("ref", " ".join(GH[i : i + 4] for i in range(0, 40, 4)))]},
        " ".join(GH[i : i + 4] for i in range(8, 28, 4)),
    ),
    "card with slashes in a field": (
        {"fields": [("card", _SLASHED_CARD)]},
        _SLASHED_CARD[5:],
    ),
    "card with dots as a field value": (
        {"fields": [("paid", "visa " + ".".join(CARD[i : i + 4] for i in range(0, 16, 4)))]},
        ".".join(CARD[i : i + 4] for i in range(4, 16, 4)),
    ),
    "card joined to a word as a tag": ({"tags": [f"card_{CARD}"]}, CARD[4:]),
    "GitHub token as a scope name": ({"scope": f"project:{GH.lower()}"}, GH_BODY[8:24]),
    "AWS key id as a scope name": ({"scope": f"project:{AWS_ID.lower()}"}, AWS_ID[4:]),
}


@pytest.mark.parametrize("mode", ["refuse", "redact"])
@pytest.mark.parametrize("name", NAMES)
def test_a_secret_in_a_name_or_field_is_refused_in_every_mode(
    vault: Vault, name: str, mode: str
) -> None:
    kwargs, piece = NAMES[name]
    before = vault.git.head()
    with pytest.raises(SecretRefusedError) as caught:
        vault.remember("a plain note about the deploy", secrets=mode, **kwargs)  # type: ignore[arg-type]
    assert "\n" not in str(caught.value) and piece.lower() not in str(caught.value).lower()
    assert vault.git.head() == before
    assert _gone(vault, piece) == []


def test_the_same_secret_in_the_text_is_redacted_under_redact(vault: Vault) -> None:
    memory = vault.remember(
        f"ci mirrors with #{_DASHED} and {_SLASHED_CARD} card", secrets="redact"
    )
    assert "[REDACTED:" in memory.text
    assert _gone(vault, _DASHED[10:30], _SLASHED_CARD[5:]) == []


def test_ordinary_names_and_fields_still_pass(vault: Vault) -> None:
    memory = vault.remember(
        "the staging deploy uses the blue pool",
        tags=["ops", "Deploy-2024", "asia-pacific", "release/v1-4", "ProjectPhoenixReview"],
        fields=[("ticket", "OPS-4821"), ("source", "https://wiki.example.com/Deploy_Guide")],
        scope="project:web-shop",
    )
    assert memory.was_new
    with pytest.raises(InvalidInputError):
        vault.remember("plain", tags=["has space"])


# -- hook captures of a Bash call --------------------------------------------------


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    path = tmp_path / "repo"
    path.mkdir()
    git(path, "init", "-q")  # outside a repository the hooks capture nothing
    return path


HOOK_COMMANDS = [
    name
    for name in COMMANDS
    if name
    in (
        "PGPASSWORD",
        "mysql -p attached",
        "sshpass -p",
        "docker login -p",
        "redis-cli -a",
        "curl -u",
        "here-string after login",
        "token in quotes over two lines",
        "GitHub token in quotes over two lines",
    )
]


@pytest.mark.parametrize("host", ["claude-code", "codex"])
@pytest.mark.parametrize("name", HOOK_COMMANDS)
def test_a_bash_call_with_a_credential_is_captured_redacted(
    vault: Vault, repo: Path, host: str, name: str
) -> None:
    command, piece = COMMANDS[name]
    policy = replace(Policy(), capture="everything")
    data = payload(host, "post-tool-use", repo)
    data["tool_input"]["command"] = command
    failure = "ERROR 1045 (28000): Access denied for user 'app'@'10.0.0.7'\nexit code 1"
    if isinstance(data["tool_response"], dict):
        data["tool_response"].update(stdout="", stderr=failure)
    else:
        data["tool_response"] = failure
    run_event(vault, host, "post-tool-use", data, policy)
    entry = last_log(vault)
    assert "error" not in entry and entry["captured"] >= 2, entry
    kinds = {m.kind for m in vault.library.list()}
    assert "gotcha" in kinds  # the failure went to MEMORY.md, redacted
    sessions = list((vault.root / "sessions").glob("*.md"))
    assert sessions and "[REDACTED:" in "".join(p.read_text() for p in sessions)
    assert _gone(vault, piece, piece[:10]) == []


def test_the_writer_stops_a_door_that_forgets_these_forms(vault: Vault) -> None:
    writer = vault.admin.store.writer
    before = vault.git.head()
    attempts = [
        (f"notes/{AWS_ID.lower()}.md", ["# hi", "", "plain words"], "add"),
        ("notes/ok.md", ["# hi", "", f"ran `mysql -u app -p{PW} shop`"], "add"),
        ("notes/ok2.md", ["# hi", "", f"- a note #{_DASHED}"], "add"),
        ("notes/ok3.md", ["# hi", "", "plain"], f"add: sshpass -p {PW} ssh deploy@staging"),
    ]
    for rel, lines, subject in attempts:
        with pytest.raises(SecretRefusedError), writer.transaction("test"):
            writer.current.create_file(rel, lines, subject=subject, trailers=[])  # type: ignore[attr-defined]
    assert vault.git.head() == before
    assert _gone(vault, AWS_ID[4:], PW, _DASHED[10:30]) == []


@pytest.mark.parametrize("mark", [".", ". ", " . ", "·", "•", "–", "—", "-", " ", "/ ", "_"])
def test_a_card_with_any_separator_is_found_with_a_card_word(mark: str) -> None:
    grouped = mark.join(CARD[i : i + 4] for i in range(0, 16, 4))
    assert scan(f"the visa {grouped} for the hotel"), grouped
    assert CARD[8:12] not in guard(f"the visa {grouped} for the hotel", "redact")


@pytest.mark.parametrize("mark", [".", ". ", "·", "•", "–", "-", " "])
def test_a_card_in_a_card_s_groups_counts_on_its_own(mark: str) -> None:
    grouped = mark.join(CARD[i : i + 4] for i in range(0, 16, 4))
    assert scan(f"booked with {grouped} yesterday"), grouped


@pytest.mark.parametrize("mark", ["/", ",", ":", "|"])
def test_numbers_listed_or_divided_need_a_card_word(mark: str) -> None:
    listed = mark.join(CARD[i : i + 4] for i in range(0, 16, 4))
    assert scan(f"ids {listed} from the export") == []
    assert scan(f"card {listed} from the export")
