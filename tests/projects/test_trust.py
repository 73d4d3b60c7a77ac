"""What the person confirmed, kept in their own config folder (mdmem/projects/trust.py)."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from mdmem.errors import ConfigError
from mdmem.projects import trust


def test_a_confirmation_is_bound_to_the_path_and_the_bytes(tmp_path: Path) -> None:
    policy = tmp_path / "repo" / ".mdmem.toml"
    policy.parent.mkdir()
    policy.write_text('scope = "project:x"\n')
    data = policy.read_bytes()
    assert not trust.is_confirmed(policy, data)
    trust.confirm(policy, data)
    assert trust.is_confirmed(policy, data)
    assert not trust.is_confirmed(policy, data + b"capture = 'everything'\n")
    copy = tmp_path / "other" / ".mdmem.toml"
    copy.parent.mkdir()
    copy.write_bytes(data)
    assert not trust.is_confirmed(copy, data)  # another checkout's copy asks again
    assert trust.forget(policy) and not trust.is_confirmed(policy, data)
    assert not trust.forget(policy)


def test_the_store_is_the_persons_own_and_private(tmp_path: Path) -> None:
    policy = tmp_path / ".mdmem.toml"
    policy.write_text("capture = 'off'\n")
    trust.confirm(policy, policy.read_bytes())
    store = Path(os.environ["MDMEM_CONFIG_HOME"]) / trust.STORE_FILE
    assert stat.S_IMODE(store.stat().st_mode) == 0o600
    saved = json.loads(store.read_text())
    assert saved["files"][str(policy.resolve())]["sha256"] == trust.digest(policy.read_bytes())
    store.write_text("not json")  # a broken store confirms nothing and does not raise
    assert not trust.is_confirmed(policy, policy.read_bytes())


def test_one_old_scope_goes_to_one_project() -> None:
    trust.adopt("github.com/acme/api", "project:api")
    trust.adopt("github.com/acme/api", "project:api")  # again: no change
    assert trust.adopted("github.com/acme/api") == ("project:api",)
    with pytest.raises(ConfigError, match=r"already adopted by github\.com/acme/api"):
        trust.adopt("github.com/otherco/api", "project:api")
    assert trust.adopted("github.com/otherco/api") == ()
