"""bench/rerank_fit.py: the fit and the leave-one-conversation-out split, on rows
whose right answer is known by hand (no vault, no model)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.bench.scripts import load_bench

fit_mod = load_bench("rerank_fit")


def _row(conv: str, n: int) -> object:
    # Six candidates; the evidence is ranked 6th by base score, but it is the
    # only one whose date feature fires.
    ids = [frozenset({f"{conv}:{n}:{i}"}) for i in range(6)]
    base = [0.6, 0.55, 0.5, 0.45, 0.4, 0.35]
    features = [{"date": 1.0 if i == 5 else 0.0, "vector": 0.5} for i in range(6)]
    return fit_mod.Row(conv, 2, ids, base, features, {f"{conv}:{n}:5"})


def test_the_fit_finds_the_feature_that_separates_evidence() -> None:
    rows = [_row(c, n) for c in ("a", "b", "c") for n in range(4)]
    assert fit_mod.metrics(rows, {})["R@5"] == 0.0
    weights = fit_mod.fit(rows)
    assert weights["date"] > 0.25
    assert fit_mod.metrics(rows, weights)["R@1"] == 1.0


def test_leave_one_out_scores_each_conversation_with_weights_fitted_elsewhere() -> None:
    # Conversation "z" breaks the pattern (its evidence never has the
    # feature): its held-out score must show that, not an in-fold fit.
    rows = [_row(c, n) for c in ("a", "b") for n in range(4)]
    odd = _row("z", 0)
    odd.features = [{"date": 1.0 if i == 0 else 0.0} for i in range(6)]  # type: ignore[attr-defined]
    out = fit_mod.loco([*rows, odd])
    folds = {f["conversation"]: f for f in out["folds"]}
    assert folds["a"]["R@5"] == 1.0 and folds["b"]["R@5"] == 1.0
    assert folds["z"]["R@5"] == 0.0  # weights from a and b push its evidence down
    assert 0.0 < out["R@5"] < 1.0


def test_holdout_scores_a_set_nothing_was_fitted_on() -> None:
    train = [_row(c, n) for c in ("a", "b") for n in range(4)]
    test = [_row("h", n) for n in range(3)]
    out = fit_mod.holdout(train, test)
    assert out["first_stage"]["R@5"] == 0.0  # the evidence is 6th by base score
    assert out["fitted"]["R@1"] == 1.0
    assert out["weights"]["date"] > 0
    assert set(out["fitted"]["by_category_R@5"]) == {2}


def test_loco_reports_each_data_set_apart() -> None:
    rows = [_row(c, n) for c in ("a", "b", "c") for n in range(3)]
    for r in rows:
        r.dataset = "own" if r.conversation == "c" else "locomo"  # type: ignore[attr-defined]
    out = fit_mod.loco(rows)
    assert set(out["by_dataset"]) == {"locomo", "own"}
    assert out["by_dataset"]["own"]["R@5"] == 1.0
    assert out["by_dataset"]["own"]["n"] == 3
    assert out["by_dataset"]["own"]["by_category_R@5"] == {2: 1.0}
    assert set(out["by_dataset"]["locomo"]["by_category_MRR"]) == {2}


def test_leave_one_out_over_several_files_shares_the_row_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = [tmp_path / "one.json", tmp_path / "two.json"]
    for i, path in enumerate(files):
        path.write_text(f"[{i}]")
    calls: list[str] = []

    def collect(path: Path, *, embedder: str, record: str) -> list[object]:
        calls.append(path.stem)
        rows = [_row(f"{path.stem}-{c}", n) for c in "ab" for n in range(2)]
        for r in rows:
            r.dataset = path.stem  # type: ignore[attr-defined]
        return rows

    monkeypatch.setattr(fit_mod, "collect", collect)
    rows = tmp_path / "rows"
    rows.mkdir()
    out = fit_mod.leave_one_conversation_out(files, embedder="hash", record="memories", rows=rows)
    again = fit_mod.leave_one_conversation_out(files, embedder="hash", record="memories", rows=rows)
    assert calls == ["one", "two"]  # the second run read the cache
    assert len(out["folds"]) == 4 and again["R@5"] == out["R@5"]
    assert set(out["by_dataset"]) == {"one", "two"}


def test_collected_rows_are_cached_by_the_data_file_contents(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tmp_path / "set.json"
    data.write_text("[]")
    cache = tmp_path / "rows.json"
    calls: list[Path] = []

    def collect(path: Path, *, embedder: str, record: str) -> list[object]:
        calls.append(path)
        return [_row("a", 0)]

    monkeypatch.setattr(fit_mod, "collect", collect)
    first = fit_mod.rows_for(data, embedder="hash", record="session", cache=cache)
    again = fit_mod.rows_for(data, embedder="hash", record="session", cache=cache)
    assert len(calls) == 1 and again == first
    data.write_text("[ ]")  # another file: collected again
    fit_mod.rows_for(data, embedder="hash", record="session", cache=cache)
    assert len(calls) == 2


def test_what_recalls_identifier_rule_put_first_stays_first_whatever_the_weights() -> None:
    # Recall puts a block holding an identifier the query names first after the
    # re-ranker (mdmem.recall.identifiers); scored offline, it must stay there, or
    # the held-out line measures a ranking recall never returns.
    row = _row("a", 0)
    assert fit_mod.metrics([row], {})["R@1"] == 0.0
    row.named = [i == 5 for i in range(6)]  # type: ignore[attr-defined]
    assert fit_mod.metrics([row], {})["R@1"] == 1.0
    assert fit_mod.metrics([row], {"date": -5.0})["R@1"] == 1.0
