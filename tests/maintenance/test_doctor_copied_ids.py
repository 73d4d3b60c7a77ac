"""doctor reports an id on two lines (a copied line) and --fix gives the copy a fresh id."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

from click.testing import CliRunner

from mdmem import Vault
from mdmem.cli import main
from tests.conftest import HUMAN_ENV, git

_ID_AT_END = re.compile(r"\^(m-[0-9a-z]+)\s*$")


def _lines_with(root: Path, rel: str, needle: str) -> list[str]:
    return [x for x in (root / rel).read_text(encoding="utf-8").splitlines() if needle in x]


def _append(root: Path, rel: str, line: str) -> None:
    path = root / rel
    text = path.read_text(encoding="utf-8") if path.exists() else "# Notes\n"
    path.write_text(text.rstrip("\n") + "\n" + line + "\n", encoding="utf-8")


def _last_commit(root: Path) -> tuple[str, str]:
    subject = git(root, "log", "-1", "--format=%s").strip()
    body = git(root, "log", "-1", "--format=%B")
    return subject, body


def _id_problems(vault: Vault) -> list[str]:
    return [p.detail for p in vault.admin.doctor().problems if p.check == "ids are unique"]


def test_doctor_reports_a_copy_across_files_and_fix_renames_the_copy(vault: Vault) -> None:
    m = vault.remember("The user drinks oolong tea.")
    line = _lines_with(vault.root, "MEMORY.md", m.id)[0]
    # The copy was made and committed (by a person) before the agent wrote to
    # MEMORY.md again, so MEMORY.md is the file changed last: the copy is
    # still the line in USER.md, the file that got the id later.
    _append(vault.root, "USER.md", line.replace(" ^", " in the morning ^"))
    git(vault.root, "commit", "-qam", "copy a line", human=True)
    vault.remember("The user cycles to work.")
    memory_before = (vault.root / "MEMORY.md").read_bytes()
    user_before = (vault.root / "USER.md").read_bytes()

    problems = _id_problems(vault)
    assert len(problems) == 1
    detail = problems[0]
    assert m.id in detail and "MEMORY.md:" in detail and "USER.md:" in detail
    assert detail.index("MEMORY.md:") < detail.index("USER.md:")  # the original first

    report = vault.admin.doctor(fix=True)
    assert detail in report.fixed
    # The original is untouched, byte for byte; the copy's line differs in its id only.
    assert (vault.root / "MEMORY.md").read_bytes() == memory_before
    user_after = (vault.root / "USER.md").read_bytes()
    fresh = _ID_AT_END.search(_lines_with(vault.root, "USER.md", "in the morning")[0])
    assert fresh is not None and fresh.group(1) != m.id
    assert user_after == user_before.replace(m.id.encode(), fresh.group(1).encode())

    subject, body = _last_commit(vault.root)
    assert subject.startswith("repair: fresh id for a copied line")
    assert "Op: repair" in body and f"Memory-Id: {fresh.group(1)}" in body
    assert git(vault.root, "status", "--porcelain").strip() == ""

    again = vault.admin.doctor()
    assert again.ok, again.problems
    assert vault.get(m.id).path == "MEMORY.md"
    assert vault.get(fresh.group(1)).text == "The user drinks oolong tea. in the morning"
    hits = {(h.path, h.id) for h in vault.recall("oolong tea", mode="keyword").items}
    assert hits == {("MEMORY.md", m.id), ("USER.md", fresh.group(1))}


def test_fix_renames_the_later_line_within_one_file(vault: Vault) -> None:
    m = vault.remember("The staging database is called pinecone.")
    n = vault.remember("The prod database is called sequoia.")
    path = vault.root / "MEMORY.md"
    lines = path.read_text(encoding="utf-8").splitlines()
    at = next(i for i, x in enumerate(lines) if m.id in x)
    lines.insert(at + 1, lines[at].replace("pinecone", "pinecone-2"))
    lines.append(lines[at].replace("pinecone", "pinecone-3"))  # a third line, after sequoia
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")

    problems = _id_problems(vault)
    assert len(problems) == 1 and "is on 3 lines" in problems[0]
    vault.admin.doctor(fix=True)
    ids = {
        x.split(" ^")[0]: _ID_AT_END.search(x).group(1)  # type: ignore[union-attr]
        for x in path.read_text(encoding="utf-8").splitlines()
        if "database" in x
    }
    assert ids["- The staging database is called pinecone."] == m.id
    assert ids["- The prod database is called sequoia."] == n.id
    assert len(set(ids.values())) == 4
    assert vault.admin.doctor().ok
    assert len(vault.recall("pinecone", mode="keyword").items) == 3


def test_fix_is_one_repair_commit_after_the_humans_edit(vault: Vault) -> None:
    m = vault.remember("Backups run at 02:00.")
    _append(vault.root, "notes.md", _lines_with(vault.root, "MEMORY.md", m.id)[0])
    report = vault.admin.doctor(fix=True)  # the copy is not committed yet
    assert report.ok, report.problems
    log = git(vault.root, "log", "-2", "--format=%an|%s").splitlines()
    assert log[0].split("|")[1].startswith("repair: fresh id for a copied line")
    assert log[1].split("|")[1] == "edit: notes.md"  # the person's own commit, first
    assert len(vault.recall("backups", mode="keyword").items) == 2
    assert vault.get(m.id).path == "MEMORY.md"


def test_doctor_cli_lists_the_places_and_exits_1(vault: Vault) -> None:
    m = vault.remember("Parking is on level 3.")
    _append(vault.root, "WORLD.md", _lines_with(vault.root, "MEMORY.md", m.id)[0])
    runner = CliRunner()
    out = runner.invoke(main, ["--vault", str(vault.root), "doctor", "--json"])
    assert out.exit_code == 1
    data = json.loads(out.output)
    details = [p["detail"] for p in data["problems"] if p["check"] == "ids are unique"]
    assert len(details) == 1 and "MEMORY.md:" in details[0] and "WORLD.md:" in details[0]
    fixed = runner.invoke(main, ["--vault", str(vault.root), "doctor", "--fix"])
    assert fixed.exit_code == 0, fixed.output
    assert runner.invoke(main, ["--vault", str(vault.root), "doctor"]).exit_code == 0


def test_a_fresh_process_sees_both_lines_before_and_after_the_fix(vault: Vault) -> None:
    m = vault.remember("The dog is called Biscuit.")
    _append(vault.root, "USER.md", _lines_with(vault.root, "MEMORY.md", m.id)[0])
    vault.recall("Biscuit")  # this process indexes the copy
    vault.close()
    script = (
        "import sys; from mdmem import Vault; v = Vault.open(sys.argv[1]);"
        " print(sorted(h.path for h in v.recall('dog Biscuit', mode='keyword').items))"
    )

    def paths_seen() -> str:
        return subprocess.run(
            [sys_executable(), "-c", script, str(vault.root)],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()

    assert paths_seen() == "['MEMORY.md', 'USER.md']"
    again = Vault.open(vault.root)
    assert again.admin.doctor(fix=True).ok
    again.close()
    assert paths_seen() == "['MEMORY.md', 'USER.md']"


def sys_executable() -> str:
    import sys

    return sys.executable


def test_fix_follows_git_even_when_recall_took_the_copy_for_the_original(vault: Vault) -> None:
    m = vault.remember("The spare key is under the blue pot.")
    path = vault.root / "MEMORY.md"
    text = path.read_text(encoding="utf-8")
    line = _lines_with(vault.root, "MEMORY.md", m.id)[0]
    _append(vault.root, "A.md", line.replace(" ^", " (moved) ^"))
    # The person cuts the line from MEMORY.md, then undoes it: meanwhile the
    # catalog took the line in A.md for the memory, and MEMORY.md's for a copy.
    path.write_text(text.replace(line + "\n", ""), encoding="utf-8")
    assert vault.get(m.id).path == "A.md"
    path.write_text(text, encoding="utf-8")
    assert len(vault.recall("spare key blue pot", mode="keyword").items) == 2

    detail = _id_problems(vault)[0]
    assert detail.index("MEMORY.md:") < detail.index("A.md:")  # git: MEMORY.md had it first
    assert vault.admin.doctor(fix=True).ok
    assert path.read_text(encoding="utf-8") == text  # the original keeps its id
    assert vault.get(m.id).path == "MEMORY.md"
    fresh = _ID_AT_END.search(_lines_with(vault.root, "A.md", "(moved)")[0])
    assert fresh is not None and fresh.group(1) != m.id
    hits = {(h.path, h.id) for h in vault.recall("spare key blue pot", mode="keyword").items}
    assert hits == {("MEMORY.md", m.id), ("A.md", fresh.group(1))}
    keys = vault.admin.store.indexer.keyword.ids()
    assert {m.id, fresh.group(1)} <= keys and not [k for k in keys if "#^" in k]
    assert vault.admin.doctor().ok


def test_commits_of_the_same_second_still_order_by_history(vault: Vault) -> None:
    m = vault.remember("The boiler pressure should read 1.5 bar.")
    _append(vault.root, "A.md", _lines_with(vault.root, "MEMORY.md", m.id)[0])
    # Committed with the very timestamp of the commit that wrote the original:
    # "A.md" sorts first, so only the history can tell which line came first.
    when = git(vault.root, "log", "-1", "--format=%cI").strip()
    env = {**os.environ, **HUMAN_ENV, "GIT_COMMITTER_DATE": when, "GIT_AUTHOR_DATE": when}
    subprocess.run(["git", "add", "A.md"], cwd=vault.root, check=True, env=env)
    subprocess.run(["git", "commit", "-qm", "copy"], cwd=vault.root, check=True, env=env)
    detail = _id_problems(vault)[0]
    assert detail.index("MEMORY.md:") < detail.index("A.md:"), detail
    assert vault.admin.doctor(fix=True).ok
    assert _lines_with(vault.root, "MEMORY.md", m.id)
    assert not _lines_with(vault.root, "A.md", m.id)
