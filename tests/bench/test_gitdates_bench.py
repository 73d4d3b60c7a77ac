"""bench/gitdates.py runs end to end on a tiny history (the numbers are not checked)."""

from __future__ import annotations

import sys

import pytest

from tests.bench.scripts import load_bench


def test_the_git_dates_bench_runs(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    bench = load_bench("gitdates", as_name="bench_gitdates")
    monkeypatch.setattr(sys, "argv", ["gitdates.py", "--notes", "12", "--commits", "30"])
    bench.main()
    out = capsys.readouterr().out
    assert "first pass (no cache)" in out
    assert "12 files dated" in out
    assert "catalog first scan, no dating (baseline)" in out
