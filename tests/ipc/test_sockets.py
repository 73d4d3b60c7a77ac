"""A socket never changes the mode of a folder mdmem did not create (issue #33, item 4).

``serve --socket DIR/x.sock`` and the warm server's runtime folder: a folder
that exists and isn't private (a shared 1777 temporary folder, a 0755 home
folder) is refused and left exactly as it was; a missing one is created 0700.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from mdmem import Vault
from mdmem.errors import MdmemError
from mdmem.warm.client import paths_for
from mdmem.warm.server import WarmServer, ensure_private_folder


@pytest.fixture
def short_dir() -> Iterator[Path]:
    """A short folder (sockaddr_un paths are short), removed at the end."""
    folder = Path(tempfile.mkdtemp(prefix="mds"))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


@pytest.mark.parametrize("mode", [0o1777, 0o755, 0o750, 0o711])
def test_a_folder_that_is_not_private_is_refused_and_left_alone(short_dir: Path, mode: int) -> None:
    shared = short_dir / "shared"
    shared.mkdir()
    os.chmod(shared, mode)
    with pytest.raises(MdmemError, match="not a private folder"):
        ensure_private_folder(shared)
    assert _mode(shared) == mode


def test_a_missing_folder_is_created_private_and_its_parent_left_alone(short_dir: Path) -> None:
    os.chmod(short_dir, 0o1777)
    ensure_private_folder(short_dir / "mine")
    assert _mode(short_dir / "mine") == 0o700
    assert _mode(short_dir) == 0o1777
    ensure_private_folder(short_dir / "mine")  # a second time: it is private already
    assert _mode(short_dir / "mine") == 0o700


def test_a_link_to_a_private_folder_is_refused(short_dir: Path) -> None:
    (short_dir / "real").mkdir(mode=0o700)
    (short_dir / "link").symlink_to(short_dir / "real")
    with pytest.raises(MdmemError, match="not a private folder"):
        ensure_private_folder(short_dir / "link")


@pytest.mark.parametrize("mode", [0o1777, 0o755])
def test_serve_socket_in_a_shared_folder_fails_and_keeps_its_mode(
    vault: Vault, short_dir: Path, mode: int
) -> None:
    os.chmod(short_dir, mode)
    path = short_dir / "mcp.sock"
    cmd = [sys.executable, "-m", "mdmem.cli.serve", "serve", "--vault", str(vault.root)]
    done = subprocess.run(
        [*cmd, "--socket", str(path)],
        env={**os.environ, "MDMEM_EMBEDDER_PROVIDER": "hash"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode != 0
    assert "not a private folder" in done.stderr
    assert "Traceback" not in done.stderr
    assert _mode(short_dir) == mode
    assert not path.exists()


@pytest.mark.parametrize("mode", [0o1777, 0o755])
def test_the_warm_server_in_a_shared_runtime_folder_keeps_its_mode(
    vault: Vault, short_dir: Path, mode: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    os.chmod(short_dir, mode)
    monkeypatch.setenv("MDMEM_RUNTIME_DIR", str(short_dir))
    assert paths_for(vault.root).folder == short_dir
    with pytest.raises(MdmemError, match="not a private folder"):
        WarmServer(vault).bind()
    assert _mode(short_dir) == mode
    assert list(short_dir.iterdir()) == []
