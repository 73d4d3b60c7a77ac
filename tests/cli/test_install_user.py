"""``make install-user`` puts ``mdmem`` on PATH in a throwaway HOME (no venv to activate)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="needs make")


def _fake_venv(tmp_path: Path) -> Path:
    """A venv whose install stamp is current, so `make install` has nothing to do,
    and whose `mdmem` runs this interpreter's mdmem (the one under test)."""
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    script = venv / "bin" / "mdmem"
    script.write_text(f"#!{sys.executable}\nfrom mdmem.cli import main\nmain()\n")
    script.chmod(0o755)
    (venv / "bin" / "python").symlink_to(sys.executable)
    stamp = venv / ".mdmem-installed"
    stamp.touch()
    later = (ROOT / "pyproject.toml").stat().st_mtime + 10
    os.utime(stamp, (later, later))
    return venv


def _env(home: Path, path: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MAKE")}
    env.update(HOME=str(home), PATH=path)
    env.setdefault("PYTHONPATH", str(ROOT))
    return env


def test_install_user_links_mdmem_onto_path(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    venv = _fake_venv(tmp_path)
    path = f"{home}/.local/bin:/usr/bin:/bin"
    env = _env(home, path)
    out = subprocess.run(
        ["make", "-C", str(ROOT), "install-user", f"VENV={venv}"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr + out.stdout
    link = home / ".local" / "bin" / "mdmem"
    assert link.is_symlink() and link.resolve() == (venv / "bin" / "mdmem").resolve()
    assert "not on PATH" not in out.stdout
    # A new shell finds it by name: -h and -V work, and --vault after the command.
    for args in ("-h", "-V"):
        ran = subprocess.run(
            ["sh", "-c", f"mdmem {args}"], env=env, capture_output=True, text=True, timeout=60
        )
        assert ran.returncode == 0, ran.stderr
    vault = tmp_path / "v"
    subprocess.run(["sh", "-c", f"mdmem init {vault}"], env=env, check=True, capture_output=True)
    recalled = subprocess.run(
        ["sh", "-c", f"mdmem recall --vault {vault} anything"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert recalled.returncode == 0, recalled.stderr


def test_install_user_says_how_to_reach_a_folder_off_path(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    venv = _fake_venv(tmp_path)
    out = subprocess.run(
        ["sh", str(ROOT / "scripts" / "install-on-path.sh"), str(venv / "bin" / "mdmem")],
        env=_env(home, "/usr/bin:/bin"),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    assert (home / ".local" / "bin" / "mdmem").is_symlink()
    assert "not on PATH" in out.stdout and "export PATH=" in out.stdout


def test_install_user_stays_in_home_even_as_root_with_a_system_folder_on_path(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    system = tmp_path / "usr-local-bin"  # writable, on PATH, outside HOME: like root's
    system.mkdir()
    venv = _fake_venv(tmp_path)
    script = ROOT / "scripts" / "install-on-path.sh"
    # The script's one system folder is /usr/local/bin: point it here for the test.
    text = script.read_text().replace("/usr/local/bin", str(system))
    copy = tmp_path / "install-on-path.sh"
    copy.write_text(text)
    env = _env(home, f"{system}:/usr/local/bin:/usr/bin:/bin")
    out = subprocess.run(
        ["sh", str(copy), str(venv / "bin" / "mdmem")],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    assert (home / ".local" / "bin" / "mdmem").is_symlink()
    assert list(system.iterdir()) == []
    assert "not on PATH" in out.stdout
    # Asked for, it goes there.
    told = subprocess.run(
        ["sh", str(copy), str(venv / "bin" / "mdmem")],
        env={**env, "BINDIR": str(system)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert told.returncode == 0 and (system / "mdmem").is_symlink()


def test_install_user_leaves_another_mdmem_alone(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".local" / "bin").mkdir(parents=True)
    theirs = home / ".local" / "bin" / "mdmem"
    theirs.write_text("#!/bin/sh\necho theirs\n")
    venv = _fake_venv(tmp_path)
    out = subprocess.run(
        ["sh", str(ROOT / "scripts" / "install-on-path.sh"), str(venv / "bin" / "mdmem")],
        env=_env(home, f"{home}/.local/bin:/usr/bin:/bin"),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 1 and "not a link" in out.stderr
    assert theirs.read_text() == "#!/bin/sh\necho theirs\n"
