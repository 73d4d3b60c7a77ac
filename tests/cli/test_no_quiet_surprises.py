"""The command line says what it did and speaks its own language: `remember`
names what it retired, and an error names the flag to pass, never the
Python parameter behind it."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from mdmem import Vault
from mdmem.cli import main
from tests.secret_samples import FORMATS

ROOT = Path(__file__).resolve().parents[2]
TUESDAY = "Production deploys happen on Tuesdays after the 10am standup."
THURSDAY = "Production deploys happen on Thursdays after the 10am standup."


def _run(vault: Vault, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["--vault", str(vault.root), *args])
    return result.exit_code, result.stdout, result.stderr


def test_remember_says_what_it_superseded(vault: Vault, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MDMEM_EMBEDDER_PROVIDER", "minilm")  # auto-supersede by meaning
    code, out, _ = _run(vault, "remember", TUESDAY, "--kind", "decision")
    assert code == 0 and "superseded" not in out
    old_id = out.split()[1]
    code, out, _ = _run(vault, "remember", THURSDAY, "--kind", "decision")
    assert code == 0, out
    assert f"superseded {old_id}: {TUESDAY}" in out


@pytest.mark.parametrize(
    ("args", "flag"),
    [
        (["remember", FORMATS[0].text], "--redact"),
        (["log", FORMATS[0].text], "--redact"),
        (["journal", FORMATS[0].text], "--redact"),
        (["learn", "Infra", FORMATS[0].text], "--redact"),
    ],
    ids=["remember", "log", "journal", "learn"],
)
def test_a_refused_secret_names_the_flag_that_redacts(
    vault: Vault, args: list[str], flag: str
) -> None:
    code, _, err = _run(vault, *args)
    assert code == 1 and f"pass {flag} to store it redacted" in err
    assert "secrets=" not in err
    code, out, _ = _run(vault, *args, flag)  # and the flag does it
    assert code == 0, out


def test_purge_without_yes_names_yes(vault: Vault) -> None:
    memory = vault.remember("The user prefers metric units.")
    code, _, err = _run(vault, "purge", memory.id)
    assert code == 1 and "pass --yes to proceed" in err and "confirm=" not in err


def test_the_python_api_keeps_its_own_spelling(vault: Vault) -> None:
    with pytest.raises(Exception, match=r"pass secrets='redact' to store it redacted"):
        vault.remember(FORMATS[0].text)


# A message that tells the reader to pass or set a Python argument ("pass
# force=True", "with importance="): reachable from the command line, it must
# be built with MdmemError.naming so the CLI can say the flag instead.
_PYTHON_ARGUMENT = re.compile(r"\b(?:pass|with|set|re-run with)\s+\w+=")
# Library-only messages: no command of the CLI can raise them.
_API_ONLY = {
    # remember(fields=...) is the Python API's; the CLI has --importance/--origin.
    ("mdmem/store/memories.py", "set importance and origin with importance= and origin="),
}


def test_no_error_message_speaks_python_to_the_command_line() -> None:
    offenders = []
    for path in sorted((ROOT / "mdmem").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Raise) or not isinstance(node.exc, ast.Call):
                continue
            call = node.exc
            if isinstance(call.func, ast.Attribute) and call.func.attr == "naming":
                continue
            text = "".join(
                sub.value
                for sub in ast.walk(call)
                if isinstance(sub, ast.Constant) and isinstance(sub.value, str)
            )
            if _PYTHON_ARGUMENT.search(text) and (rel, text) not in _API_ONLY:
                offenders.append(f"{rel}:{node.lineno}: {text[:90]}")
    assert offenders == []
