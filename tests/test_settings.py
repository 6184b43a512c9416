"""Settings layering (defaults < user < repo < env), error messages, and the repo's limits."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memtree_core.settings import Settings, SettingsError, load_settings


def write(path: Path, data: object) -> None:
    path.write_text(json.dumps(data))


def test_spec_defaults() -> None:
    s = Settings()
    assert s.embedding_model == "nomic-embed-text"
    assert s.summarizer_model == "claude-haiku-4-5"
    assert (s.retention.stale_hours, s.retention.superseded_days) == (24, 7)
    w = s.walkers
    assert (w.embedding_idle_ms, w.embedding_batch_size, w.summarizer_subtree_threshold) == (5000, 32, 25)
    assert (w.dedupe_interval_ms, w.staleness_interval_ms, w.pruner_interval_ms) == (60000, 30000, 300000)
    assert (s.capture.max_bytes, s.capture.filter_min_size, s.capture.bash) == (100000, 50, True)


def test_layers_override_in_order(tmp_path: Path) -> None:
    home, repo = tmp_path / "home", tmp_path / "repo"
    home.mkdir()
    repo.mkdir()
    write(home / "config.json", {"capture": {"maxBytes": 1000, "filterMinSize": 10},
                                 "retention": {"staleHours": 1}})
    write(repo / ".memtree.json", {"capture": {"maxBytes": 2000}, "embeddingModel": "local"})
    env = {"MEMTREE_CAPTURE__MAX_BYTES": "3000", "MEMTREE_WALKERS__PRUNERINTERVALMS": "5"}
    loaded = load_settings(home, repo, env)
    s = loaded.settings
    assert s.capture.max_bytes == 3000  # env wins
    assert s.capture.filter_min_size == 10  # user layer kept where nothing overrides it
    assert s.embedding_model == "local"  # repo over default
    assert s.retention.stale_hours == 1
    assert s.walkers.pruner_interval_ms == 5
    assert loaded.files == [str(home / "config.json"), str(repo / ".memtree.json")]
    assert load_settings(home, repo, {}).settings.capture.max_bytes == 2000


def test_bad_value_names_file_key_and_type(tmp_path: Path) -> None:
    write(tmp_path / "config.json", {"capture": {"maxBytes": "lots"}})
    with pytest.raises(SettingsError) as err:
        load_settings(tmp_path, None, {})
    msg = str(err.value)
    assert str(tmp_path / "config.json") in msg and "capture.maxBytes" in msg and "integer" in msg


def test_unknown_key_and_bad_json_and_bad_env(tmp_path: Path) -> None:
    write(tmp_path / "config.json", {"captur": {}})
    with pytest.raises(SettingsError, match="unknown key 'captur'"):
        load_settings(tmp_path, None, {})
    (tmp_path / "config.json").write_text("{not json")
    with pytest.raises(SettingsError, match="not valid JSON at line 1"):
        load_settings(tmp_path, None, {})
    (tmp_path / "config.json").unlink()
    with pytest.raises(SettingsError, match="MEMTREE_CAPTURE__MAX_BYTES.*capture.maxBytes"):
        load_settings(tmp_path, None, {"MEMTREE_CAPTURE__MAX_BYTES": "x"})
    with pytest.raises(SettingsError, match="MEMTREE_NOPE: no settings key 'NOPE'"):
        load_settings(tmp_path, None, {"MEMTREE_NOPE": "1"})


def test_non_setting_variables_are_not_settings(tmp_path: Path) -> None:
    env = {"MEMTREE_HOME": "/x", "MEMTREE_LOAD_PLUGINS": "", "MEMTREE_STRICT_PLUGINS": "1"}
    assert load_settings(tmp_path, None, env).settings == Settings()


def test_repo_cannot_weaken_redaction_or_bash_capture(tmp_path: Path) -> None:
    home, repo = tmp_path / "home", tmp_path / "repo"
    home.mkdir()
    repo.mkdir()
    write(home / "config.json", {"capture": {"bash": False}})
    write(repo / ".memtree.json", {"capture": {"bash": True}, "redaction": {"enabled": False}})
    loaded = load_settings(home, repo, {})
    assert loaded.settings.capture.bash is False
    assert loaded.settings.redaction.enabled is True
    assert len(loaded.warnings) == 2 and all(".memtree.json" in w for w in loaded.warnings)
    # The user's own layers may do it.
    assert load_settings(home, repo, {"MEMTREE_REDACTION__ENABLED": "false"}).settings.redaction.enabled is False
    # Without a user opinion, a repo may turn Bash capture off or on.
    write(home / "config.json", {})
    assert load_settings(home, repo, {}).settings.capture.bash is True


def test_info_json_reports_a_bad_config_clearly(home: Path, project: Path) -> None:
    from conftest import run_memtree

    write(project / ".memtree.json", {"walkers": {"stalenessIntervalMs": -5}})
    out = run_memtree("info", "--json", "--project", str(project))
    assert out.returncode == 2
    assert "walkers.stalenessIntervalMs" in out.stderr and ".memtree.json" in out.stderr
    assert "Traceback" not in out.stderr


def test_durability_is_the_users_choice_only(tmp_path: Path) -> None:
    home, repo = tmp_path / "home", tmp_path / "repo"
    home.mkdir()
    repo.mkdir()
    assert load_settings(home, repo, {}).settings.store.synchronous == "normal"
    write(home / "config.json", {"store": {"synchronous": "full"}})
    write(repo / ".memtree.json", {"store": {"synchronous": "normal"}})
    loaded = load_settings(home, repo, {})
    assert loaded.settings.store.synchronous == "full"
    assert any("store.synchronous ignored" in w for w in loaded.warnings)
    write(home / "config.json", {})
    write(repo / ".memtree.json", {"store": {"synchronous": "full"}})  # not the repo's to set either way
    assert load_settings(home, repo, {}).settings.store.synchronous == "normal"
    assert load_settings(home, repo, {"MEMTREE_STORE__SYNCHRONOUS": "full"}).settings.store.synchronous == "full"
    with pytest.raises(SettingsError, match="synchronous"):
        load_settings(home, None, {"MEMTREE_STORE__SYNCHRONOUS": "off"})


def test_the_store_opens_with_the_chosen_durability(home: Path, project: Path) -> None:
    from memtree_core.app import App

    for value, pragma in (("normal", 1), ("full", 2)):
        app = App.open(project, environ={"MEMTREE_HOME": str(home), "MEMTREE_STORE__SYNCHRONOUS": value})
        try:
            assert app.store.query_one("PRAGMA synchronous") == (pragma,)
        finally:
            app.close()
