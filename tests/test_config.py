from __future__ import annotations

from pathlib import Path

import pytest

from mdmem.config import load_settings, state_dir_for
from mdmem.errors import ConfigError


def test_defaults_file_and_env(tmp_path: Path) -> None:
    (tmp_path / "mdmem.toml").write_text(
        'agent = "file-agent"\n[recall]\nk = 7\nfusion = "blend"\n'
    )
    settings = load_settings(tmp_path, env={"MDMEM_RECALL_K": "11", "MDMEM_LLM_MODEL": "m1"})
    assert settings.agent == "file-agent"
    assert settings.recall.k == 11 and settings.recall.fusion == "blend"
    assert settings.llm.model == "m1"
    assert settings.recall.tag_boost == 0.1


def test_openai_env_fills_llm_base_url(tmp_path: Path) -> None:
    settings = load_settings(tmp_path, env={"OPENAI_BASE_URL": "http://127.0.0.1:9/v1"})
    assert settings.llm.base_url == "http://127.0.0.1:9/v1"


@pytest.mark.parametrize(
    ("toml", "message"),
    [
        ("[recall]\nk = 'many'\n", "recall.k"),
        ("[recall]\nnope = 1\n", "unknown setting"),
        ("secrets = 'maybe'\n", "secrets"),
        ("[recall\n", "mdmem.toml"),
    ],
)
def test_invalid_settings_are_clear(tmp_path: Path, toml: str, message: str) -> None:
    (tmp_path / "mdmem.toml").write_text(toml)
    with pytest.raises(ConfigError, match=message):
        load_settings(tmp_path, env={})


def test_state_dir_is_per_vault_and_outside(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    settings = load_settings(None, env={"MDMEM_STATE_DIR": str(tmp_path / "state")})
    assert state_dir_for(a, settings) != state_dir_for(b, settings)
    inside = load_settings(None, env={"MDMEM_STATE_DIR": str(a / "cache")})
    with pytest.raises(ConfigError):
        state_dir_for(a, inside)


def test_lifecycle_defaults_match_the_issue(tmp_path: Path) -> None:
    c = load_settings(tmp_path, env={}).consolidation
    assert (c.threshold, c.batch) == (30, 20)
    assert (c.same_context_threshold, c.other_context_threshold) == (0.85, 0.92)
    assert (c.judge_distance, c.judge_candidates) == (0.7, 5)
    assert c.retention_days == 30 and c.max_drop_ratio == 0.25


@pytest.mark.parametrize("section", ["llm", "embedder"])
def test_an_api_key_in_mdmem_toml_is_refused(tmp_path: Path, section: str) -> None:
    canary = "sk-canary-in-toml-0123456789"
    (tmp_path / "mdmem.toml").write_text(f'[{section}]\napi_key = "{canary}"\n')
    with pytest.raises(ConfigError) as caught:
        load_settings(tmp_path, env={})
    message = str(caught.value)
    assert f"[{section}] api_key" in message and "environment" in message
    assert f"[{section}] api_key_env" in message and canary not in message
