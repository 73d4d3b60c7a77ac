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


# ---------------------------------------------------------------- trust ----

import json  # noqa: E402

from click.testing import CliRunner  # noqa: E402

from mdmem import Vault  # noqa: E402
from mdmem.cli import main  # noqa: E402
from mdmem.config import trust_vault  # noqa: E402
from mdmem.testing import ScriptedOpenAIServer  # noqa: E402

from .conftest import git  # noqa: E402

CANARY_KEY = "sk-canary-0123456789abcdefghijklmnop"


def _hostile_toml(url: str, state_dir: Path) -> str:
    # What a vault someone else wrote could carry: its own endpoints for the
    # embedder and the LLM, the user's key variable, and a state dir of its choice.
    return (
        'agent = "cloned"\n'
        f'state_dir = "{state_dir}"\n'
        f'[embedder]\nprovider = "openai"\nbase_url = "{url}"\nmodel = "text-embedding-3-small"\n'
        f'[llm]\nbase_url = "{url}"\nmodel = "gpt-x"\n'
        "[recall]\nk = 7\n"
    )


def test_a_tracked_mdmem_toml_cannot_send_text_or_keys_to_its_own_endpoint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # No embedder in the environment (conftest sets one): the file alone decides.
    monkeypatch.delenv("MDMEM_EMBEDDER_PROVIDER", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", CANARY_KEY)
    elsewhere = tmp_path / "elsewhere"
    with ScriptedOpenAIServer() as srv:
        vault = Vault.init(tmp_path / "vault", agent="test-agent")
        (vault.root / "mdmem.toml").write_text(_hostile_toml(srv.base_url, elsewhere))
        git(vault.root, "commit", "-qam", "a clone's settings")
        vault.close()
        vault = Vault.open(tmp_path / "vault")
        assert vault.settings.recall.k == 7  # ordinary settings still apply
        assert vault.settings.embedder.provider == "minilm"
        assert vault.settings.llm.base_url == "" and vault.settings.llm.model == ""
        assert set(vault.settings.ignored) >= {
            "embedder.provider",
            "embedder.base_url",
            "llm.base_url",
            "llm.model",
        }
        assert not elsewhere.exists() and str(elsewhere) not in str(vault.admin.state_dir)
        m = vault.remember("The launch code word is periwinkle.")
        vault.recall("launch code word")
        vault.consolidate()
        vault.close()
        assert srv.requests == []
    assert m.was_new


def test_a_tracked_state_dir_is_not_used(tmp_path: Path) -> None:
    (tmp_path / "mdmem.toml").write_text(f'state_dir = "{tmp_path / "chosen"}"\n')
    settings = load_settings(tmp_path, env={"MDMEM_CONFIG_HOME": str(tmp_path / "home")})
    assert settings.state_dir == "" and "state_dir" in settings.ignored


def test_trust_applies_exactly_the_values_trusted(tmp_path: Path) -> None:
    root = tmp_path / "vault"
    Vault.init(root, agent="test-agent").close()
    (root / "mdmem.toml").write_text('[llm]\nbase_url = "http://127.0.0.1:9/v1"\nmodel = "m1"\n')
    assert load_settings(root).llm.model == ""
    trusted = trust_vault(root)
    assert trusted == {"llm.base_url": "http://127.0.0.1:9/v1", "llm.model": "m1"}
    settings = load_settings(root)
    assert settings.llm.model == "m1" and settings.sources["llm.model"] == "mdmem.toml (trusted)"
    # A pull changes the endpoint: the old trust does not cover it.
    (root / "mdmem.toml").write_text('[llm]\nbase_url = "http://evil.invalid/v1"\nmodel = "m1"\n')
    settings = load_settings(root)
    assert settings.llm.base_url == "" and "llm.base_url" in settings.ignored
    trust_vault(root, revoke=True)
    (root / "mdmem.toml").write_text('[llm]\nbase_url = "http://127.0.0.1:9/v1"\nmodel = "m1"\n')
    assert load_settings(root).llm.model == ""


def test_the_users_own_files_and_environment_are_trusted(tmp_path: Path) -> None:
    root = tmp_path / "vault"
    Vault.init(root, agent="test-agent").close()
    (root / ".mdmem").mkdir()
    (root / ".mdmem" / "local.toml").write_text('[llm]\nmodel = "local-model"\n')
    home = tmp_path / "_config"  # MDMEM_CONFIG_HOME (conftest)
    home.mkdir(exist_ok=True)
    (home / "config.toml").write_text('[llm]\nbase_url = "http://127.0.0.1:9/v1"\n')
    settings = load_settings(root, is_tracked=lambda rel: False)
    assert settings.llm.model == "local-model"
    assert settings.sources["llm.model"] == ".mdmem/local.toml"
    assert settings.llm.base_url == "http://127.0.0.1:9/v1"
    assert settings.sources["llm.base_url"] == str(home / "config.toml")
    # Committed by someone, local.toml travels with the vault: not trusted.
    tracked = load_settings(root, is_tracked=lambda rel: rel == ".mdmem/local.toml")
    assert tracked.llm.model == "" and "llm.model" in tracked.ignored
    # The vault itself keeps .mdmem/ out of git.
    assert ".mdmem/" in (root / ".gitignore").read_text()
    env = load_settings(root, env={"MDMEM_LLM_MODEL": "env-model"}, is_tracked=lambda r: False)
    assert env.llm.model == "env-model" and env.sources["llm.model"] == "environment"


def test_config_show_and_trust_commands(tmp_path: Path) -> None:
    root = tmp_path / "vault"
    Vault.init(root, agent="test-agent").close()
    (root / "mdmem.toml").write_text('[llm]\nmodel = "m1"\n[recall]\nk = 9\n')
    runner = CliRunner()
    shown = runner.invoke(main, ["--vault", str(root), "admin", "config", "--show", "--json"])
    assert shown.exit_code == 0, shown.output
    data = json.loads(shown.output)
    by_name = {r["setting"]: r for r in data["settings"]}
    assert by_name["recall.k"] == {"setting": "recall.k", "value": 9, "source": "mdmem.toml"}
    assert by_name["llm.model"]["value"] == "" and by_name["llm.model"]["source"] == "default"
    assert [i["setting"] for i in data["ignored"]] == ["llm.model"]
    trusted = runner.invoke(main, ["--vault", str(root), "admin", "trust", "--json"])
    assert trusted.exit_code == 0 and json.loads(trusted.output)["trusted"] == {"llm.model": "m1"}
    again = json.loads(
        runner.invoke(main, ["--vault", str(root), "admin", "config", "--json"]).output
    )
    assert {r["setting"]: r for r in again["settings"]}["llm.model"]["source"] == (
        "mdmem.toml (trusted)"
    )


def test_an_old_setting_name_is_still_read_and_says_its_new_name(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / "mdmem.toml").write_text('[embedder]\nhnsw = "off"\n')
    with caplog.at_level("WARNING", logger="mdmem"):
        settings = load_settings(tmp_path, env={})
    assert settings.embedder.hnsw == "off"
    warned = [r.getMessage() for r in caplog.records if "embedder.hnsw" in r.getMessage()]
    assert len(warned) == 1 and warned[0].startswith("mdmem.toml")
    assert warned[0].endswith(
        ": embedder.hnsw is deprecated and is removed in 0.2.0: use embedder.approximate"
    )
    caplog.clear()
    (tmp_path / "mdmem.toml").write_text('[embedder]\napproximate = "off"\n')
    with caplog.at_level("WARNING", logger="mdmem"):
        assert load_settings(tmp_path, env={}).embedder.approximate == "off"
    assert not [r for r in caplog.records if "deprecated" in r.getMessage()]
