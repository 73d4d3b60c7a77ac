"""Purge finds the secret: a purged memory's fragments, alone inside other sentences.

"The storeroom combination is QUOKKA-7731-ZEBRA." purged; the combination
planted in a person's note, a commit body, a tag message, another branch, a
stash, a git note, a file name, a ref name and a consolidated copy citing the
wrong source. Checked case-insensitively (Unicode case folding) over every
git object, every file and file name of the vault and of the state dir,
every ref name: gone, or the purge fails naming each holder.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from mdmem import InvalidInputError, Vault
from mdmem.cli import main
from mdmem.errors import PurgeIncompleteError
from mdmem.git.fragments import codes, fragments, named
from mdmem.git.purge import PURGED
from mdmem.git.sweep import NAME_MARK, Sweep
from mdmem.testing import ScriptedOpenAIServer
from tests.llm_fakes import FakeModel, llm_vault

from ..conftest import git

SECRET = "The storeroom combination is QUOKKA-7731-ZEBRA."
CODE = "QUOKKA-7731-ZEBRA"


def holders_of(vault: Vault, *needles: str) -> list[str]:
    """Every place holding a needle, compared case-folded: git objects (loose or packed,
    reachable or not), files and names under the vault (.git included) and the state
    dir, ref names."""
    folded = [n.casefold() for n in needles]
    found = []
    objects = subprocess.run(
        ["git", "cat-file", "--batch-all-objects", "--batch"],
        cwd=vault.root,
        capture_output=True,
        check=True,
    ).stdout.decode("utf-8", "replace")
    found += [f"git objects: {n}" for n in folded if n in objects.casefold()]
    refs = git(vault.root, "for-each-ref", "--format=%(refname)").casefold()
    found += [f"ref names: {n}" for n in folded if n in refs]
    for base in (vault.root, vault.admin.state_dir):
        for path in base.rglob("*"):
            name = str(path.relative_to(base)).casefold()
            found += [f"name {path}: {n}" for n in folded if n in name]
            if path.is_file():
                data = path.read_bytes().decode("utf-8", "replace").casefold()
                found += [f"{path}: {n}" for n in folded if n in data]
    return found


def _commit_on_branch(root: Path, branch: str, path: str, text: str, message: str) -> None:
    """A commit on another branch, made with plumbing (the work tree stays as it is)."""

    def run(*args: str, text_in: str) -> str:
        return subprocess.run(
            ["git", *args], cwd=root, input=text_in, capture_output=True, text=True, check=True
        ).stdout

    blob = run("hash-object", "-w", "--stdin", text_in=text).strip()
    base = git(root, "rev-parse", "HEAD").strip()
    listing = git(root, "ls-tree", base)
    tree = run("mktree", text_in=listing + f"100644 blob {blob}\t{path}\n").strip()
    commit = git(root, "commit-tree", tree, "-p", base, "-m", message, human=True).strip()
    git(root, "update-ref", f"refs/heads/{branch}", commit)


def _plant(vault: Vault, code: str) -> None:
    """``code`` alone, inside other sentences, in each place a person or git keeps text."""
    root = vault.root
    notes = root / "notes"
    notes.mkdir(exist_ok=True)
    (notes / "house.md").write_text(
        f"# House\n\nThe storeroom needs paint. Door: {code.lower()} since May.\n"
        "The garden is fine.\n"
    )
    (notes / f"{code}.md").write_text("# Codes\n\nA note whose name is the code.\n")
    git(root, "add", "notes", human=True)
    git(root, "commit", "-q", "-m", "house notes", "-m", f"For later: {code} works.", human=True)
    git(root, "tag", "-a", "v1", "-m", f"release one\n\nremember {code.upper()} too", human=True)
    git(root, "notes", "add", "-m", f"checked {code} at the door", "HEAD", human=True)
    _commit_on_branch(root, "side", "side.md", f"On a branch: use {code} here.\n", "side work")
    git(root, "branch", f"keys-{code.lower()}")
    scratch = notes / "scratch.md"
    scratch.write_text(f"a stash that says {code} in passing\n")
    git(root, "add", "notes/scratch.md", human=True)
    git(root, "stash", "push", "-q", "-m", f"wip with {code}", human=True)


def test_the_secret_inside_other_sentences_is_gone_from_every_place(vault: Vault) -> None:
    storeroom = vault.remember("The storeroom is behind the kitchen.")
    boat = vault.remember("The boat is moored at pier nine.")
    secret = vault.remember(SECRET)
    # Retired: its line moves to MEMORY.earlier.md, its fields stay in .fields/.
    newer = vault.supersede(secret.id, "The storeroom combination changed in June.")
    _plant(vault, CODE)
    vault.recall("storeroom combination")  # index rows, cached vectors
    assert len(holders_of(vault, CODE)) > 8
    earlier = vault.root / "MEMORY.earlier.md"
    assert CODE in earlier.read_text()

    result = vault.git.purge(secret.id, confirm=True)

    assert holders_of(vault, CODE) == []
    assert holders_of(vault, SECRET) == []
    assert result.fragments == {"code": 1}
    # Only the code goes: the rest of each sentence, and every other memory, stays.
    house = (vault.root / "notes" / "house.md").read_text()
    assert f"The storeroom needs paint. Door: {PURGED} since May." in house
    assert (vault.root / "notes" / f"{NAME_MARK}.md").read_text().startswith("# Codes")
    assert [vault.get(m.id).text for m in (storeroom, boat, newer)] == [
        "The storeroom is behind the kitchen.",
        "The boat is moored at pier nine.",
        "The storeroom combination changed in June.",
    ]
    assert secret.id not in earlier.read_text() and secret.id not in _fields(vault)
    # Each ref is still there, under a name without the code.
    assert f"remember {PURGED} too" in git(vault.root, "tag", "-n3", "v1")
    assert PURGED in git(vault.root, "show", "side:side.md")
    assert f"refs/heads/keys-{NAME_MARK}" in git(vault.root, "for-each-ref")
    assert f"wip with {PURGED}" in git(vault.root, "stash", "list")
    noted = git(vault.root, "log", "--format=%H", "--grep=house notes").split()[0]
    assert git(vault.root, "notes", "show", noted) == f"checked {PURGED} at the door\n"
    cleaned = "\n".join(result.cleaned)
    assert "notes/house.md" in cleaned and "message of tag v1" in cleaned
    assert f"renamed to notes/{NAME_MARK}.md" in cleaned
    assert CODE.casefold() not in cleaned.casefold()  # the report never repeats the secret
    assert git(vault.root, "status", "--porcelain") == ""
    subprocess.run(["git", "fsck", "--strict"], cwd=vault.root, check=True, capture_output=True)


def _fields(vault: Vault) -> str:
    return "".join(p.read_text() for p in (vault.root / ".fields").glob("*.jsonl"))


def test_a_non_ascii_secret_is_found_in_any_case(vault: Vault) -> None:
    code = "Straße-8841-Ölbaum"
    secret = vault.remember(f"Der Tresor öffnet mit {code}.")
    vault.remember("Der Garten ist groß.")
    notes = vault.root / "notes"
    notes.mkdir()
    # Upper case folds ß to "ss": only full Unicode case folding finds it.
    (notes / "haus.md").write_text("# Haus\n\nTür: STRASSE-8841-ÖLBAUM, sonst nichts.\n")
    git(vault.root, "add", "notes", human=True)
    git(vault.root, "commit", "-q", "-m", "Haus", "-m", "Code: straße-8841-ölbaum", human=True)
    spellings = ("straße-8841-ölbaum", "STRASSE-8841-ÖLBAUM")
    assert len(holders_of(vault, *spellings)) >= 3

    vault.git.purge(secret.id, confirm=True)

    assert holders_of(vault, *spellings) == []
    assert (notes / "haus.md").read_text() == f"# Haus\n\nTür: {PURGED}, sonst nichts.\n"
    assert "Der Garten ist groß." in (vault.root / "MEMORY.md").read_text()


def test_an_ordinary_word_stays_and_only_the_code_goes(vault: Vault) -> None:
    vault.remember("The storeroom is behind the kitchen.")
    secret = vault.remember(SECRET)
    notes = vault.root / "notes"
    notes.mkdir()
    # "storeroom" is a kept memory's word; "combination" is a rare word, but alone.
    text = "# Jobs\n\nPaint the storeroom.\nThe combination of blue and grey works.\n"
    (notes / "jobs.md").write_text(text)
    git(vault.root, "add", "notes", human=True)
    git(vault.root, "commit", "-q", "-m", "jobs: the storeroom and a combination", human=True)

    vault.git.purge(secret.id, confirm=True)

    assert (notes / "jobs.md").read_text() == text
    assert "jobs: the storeroom and a combination" in git(vault.root, "log", "--format=%s")
    assert holders_of(vault, CODE) == []


def test_a_kept_memory_holding_the_secret_stops_the_purge_naming_it(vault: Vault) -> None:
    secret = vault.remember(f"Storeroom notes\nThe combination is {CODE}.")
    kept = vault.remember(f"The combination is {CODE}.")  # its secret line, repeated
    notes = vault.root / "notes"
    notes.mkdir()
    (notes / "house.md").write_text(f"# House\n\nDoor: {CODE}.\n")
    git(vault.root, "add", "notes", human=True)
    git(vault.root, "commit", "-q", "-m", "house", human=True)
    head = vault.git.head()

    with pytest.raises(PurgeIncompleteError) as raised:
        vault.git.purge(secret.id, confirm=True)

    error = raised.value
    assert not error.rewritten and "\n" not in str(error)
    assert f"{kept.id} (MEMORY.md)" in str(error) and "notes/house.md" in str(error)
    assert f"{kept.id} (MEMORY.md)" in error.places and "notes/house.md" in error.places
    assert CODE.casefold() not in str(error).casefold()
    assert vault.git.head() == head and vault.get(secret.id).text.startswith("Storeroom")
    # The person decides: forget the other memory, and the purge takes its history too.
    vault.forget(kept.id)
    vault.git.purge(secret.id, confirm=True)
    assert holders_of(vault, CODE) == []


def test_also_erases_a_word_the_person_names(vault: Vault) -> None:
    secret = vault.remember("The shed door answer is swordfish.")
    vault.remember("The shed is painted green.")
    notes = vault.root / "notes"
    notes.mkdir()
    (notes / "shed.md").write_text("# Shed\n\nHint: Swordfish, as ever.\n")
    git(vault.root, "add", "notes", human=True)
    git(vault.root, "commit", "-q", "-m", "shed", "-m", "SWORDFISH opens it", human=True)
    args = ["--vault", str(vault.root), "git", "purge", secret.id, "--yes"]

    refused = CliRunner().invoke(main, [*args, "--also", "ab"])
    assert refused.exit_code == 1 and "error:" in refused.output
    assert len(refused.output.strip().splitlines()) == 1
    assert vault.get(secret.id).text.startswith("The shed door")
    with pytest.raises(InvalidInputError, match="4 characters"):
        vault.git.purge(secret.id, confirm=True, also=[" x "])

    out = CliRunner().invoke(main, [*args, "--also", "swordfish", "--json"])

    assert out.exit_code == 0, out.output
    assert json.loads(out.output)["fragments"] == {"named": 1}
    assert holders_of(vault, "swordfish") == []
    assert (notes / "shed.md").read_text() == f"# Shed\n\nHint: {PURGED}, as ever.\n"
    assert "The shed is painted green." in (vault.root / "MEMORY.md").read_text()


def test_without_also_a_lone_ordinary_word_is_not_a_fragment(vault: Vault) -> None:
    # Why: "swordfish" alone reads like any word; only the person can say it is the secret.
    secret = vault.remember("The shed door answer is swordfish.")
    notes = vault.root / "notes"
    notes.mkdir()
    (notes / "fish.md").write_text("# Fish\n\nA swordfish is fast.\n")
    git(vault.root, "add", "notes", human=True)
    git(vault.root, "commit", "-q", "-m", "fish", human=True)

    result = vault.git.purge(secret.id, confirm=True)

    assert result.fragments == {}
    assert (notes / "fish.md").read_text() == "# Fish\n\nA swordfish is fast.\n"


def test_a_copy_citing_the_wrong_source_is_found_by_what_it_says(
    tmp_path: Path, server: ScriptedOpenAIServer, model: FakeModel
) -> None:
    def consolidate(blocks: dict[str, str]) -> dict[str, Any]:
        # The code came from the remembered fact; the model cites a turn of this chat.
        return {
            "summary": f"Alice asked about the storeroom; its code is {CODE}.",
            "facts": [
                {"text": f"Storeroom door code: {CODE}.", "sources": [2]},
                {"text": "The user's manager is Joao.", "sources": [3]},
            ],
            "pending": [],
            "preferences": [],
            "tone": "brisk",
            "confidence": 0.9,
        }

    model.consolidate = consolidate
    vault = llm_vault(tmp_path, server)
    secret = vault.remember(SECRET)
    s = vault.session("s1", source="cli", contact="alice")
    s.record("user", "Good morning.")
    s.record("user", "Can you check the storeroom later?")
    s.record("user", "Also, my manager is Joao.")
    result = vault.consolidate()
    facts = {m.text: m for m in result.facts}
    copy = facts[f"Storeroom door code: {CODE}."]
    assert secret.id not in vault.get(copy.id).field("sources")

    purged = vault.git.purge(secret.id, confirm=True)

    assert copy.id in purged.derived
    assert holders_of(vault, CODE) == []
    assert vault.get(facts["The user's manager is Joao."].id).text == "The user's manager is Joao."
    assert "storeroom later" in (vault.root / "sessions" / "s1.md").read_text()


# -- the pieces --------------------------------------------------------------------------------


def test_codes_are_letters_and_digits_together_never_ids_links_or_plain_words() -> None:
    assert codes(SECRET) == [CODE]
    assert codes("Remember that the Harrowby safe code is 7741-Quorn.") == ["7741-Quorn"]
    assert codes("Schlüssel-4471-ÖLBAUM and bob1985@example.com") == [
        "Schlüssel-4471-ÖLBAUM",
        "bob1985@example.com",
    ]
    linked = "See [[episodes/2024-05-01-gate#^m-01jd3k5x7q]], ^m-01jd3k5x7q and #q3-2024x."
    assert codes(linked) == []
    assert codes("On 2024-05-01 at 10:30, mp3 and utf-8, x86, the storeroom.") == []


def test_fragments_are_whole_tokens_in_any_case_and_script() -> None:
    sweep = Sweep((), PURGED, ("QUOKKA-7731-ZEBRA", "Straße-88"))
    for spelling in ("quokka-7731-zebra", "QUOKKA\\-7731\\-ZEBRA", "STRASSE-88", "straße-88"):
        text = f"before {spelling}, after"
        assert sweep.found_in(text.encode()), spelling
        assert sweep.redact_text(text) == f"before {PURGED}, after"
    for other in ("QUOKKA-7731-ZEBRAS", "xquokka-7731-zebra", "Straße-880"):
        assert not sweep.found_in(other.encode()), other
    assert sweep.redact_name("notes/QUOKKA-7731-ZEBRA.md") == f"notes/{NAME_MARK}.md"
    assert sweep.redact_name(".fields/x quokka-7731-zebra.md.jsonl") == (
        f".fields/x {NAME_MARK}.md.jsonl"
    )
    assert sweep.redact_name("heads/keys-quokka-7731-zebra", extension=False) == (
        f"heads/keys-{NAME_MARK}"
    )


def test_needles_fold_case_in_any_script() -> None:
    sweep = Sweep.of(["Der Tresor öffnet sich um acht Uhr."], mark=PURGED)
    data = "Notiz: DER TRESOR ÖFFNET SICH UM ACHT UHR. Ende".encode()
    assert sweep.redact(data) == f"Notiz: {PURGED} Ende".encode()


def test_named_strings_are_checked() -> None:
    assert named(["  swordfish ", "swordfish"], PURGED) == ("swordfish",)
    for bad in ("ab", "----", "PURGED", ""):
        with pytest.raises(InvalidInputError):
            named([bad], PURGED)


def test_a_whole_quote_owns_its_words_a_partial_one_stops_the_purge(vault: Vault) -> None:
    whole = vault.remember(f"Alice once said: {SECRET}")
    partial = vault.remember(f"Rotate {CODE} monthly.")
    plain = vault.remember("The storeroom is behind the kitchen.")
    kept = [vault.admin.store.block(m.id) for m in (whole, partial, plain)]

    found = fragments([SECRET], kept[1:])
    assert found.strings == (CODE,) and [b.id for b in found.blockers] == [partial.id]
    assert "combination" in found.rare and "storeroom" not in found.rare
    found = fragments([SECRET], kept)  # the whole quote owns the code: nothing to look for
    assert found.strings == () and found.blockers == ()


def test_a_named_string_is_looked_for_even_in_a_whole_quote(vault: Vault) -> None:
    whole = vault.remember(f"Alice once said: {SECRET}")
    block = vault.admin.store.block(whole.id)

    found = fragments([SECRET], [block], ["storeroom combination"])

    assert found.strings == ("storeroom combination",)
    assert [b.id for b in found.blockers] == [whole.id]
