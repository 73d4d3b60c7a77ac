"""bench/coding_hook.py: coding prompts put to the prompt hook as a host runs it."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from tests.bench.scripts import load_bench

coding_hook = load_bench("coding_hook")
inject = load_bench("inject")

SET = {
    "memories": [
        {"key": "ticket", "text": "OPS-5531 tracks the export job that double-counts refunds."},
        {"key": "deploy", "text": "Deploys go out on Tuesdays through the release pipeline."},
    ],
    "exact": [{"prompt": "OPS-5531", "memory": "ticket"}],
    "related": [{"prompt": "When do deploys go out?", "memory": "deploy"}],
    "unrelated": ["Who painted the Mona Lisa?"],
}


@pytest.mark.slow
def test_each_prompt_runs_the_hook_process_and_is_scored_by_citation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setenv("MDMEM_STATE_DIR", str(tmp_path / "state"))
    hooks = inject.Hooks(tmp_path, 60_000)
    hooks.env["MDMEM_SERVER"] = "off"  # cold: keyword only, no server started
    vault = tmp_path / "vault"
    ids = coding_hook.record(SET, vault)
    assert set(ids) == {"ticket", "deploy"}
    got = coding_hook.ask(hooks, vault, SET, ids)
    # The identifier rule: its memory is injected and cited first, whatever the gate.
    assert got["exact injected"] == 1.0 and got["exact first"] == 1.0
    assert got["unrelated silent"] == 1.0
    assert got["p50 ms"] > 0
