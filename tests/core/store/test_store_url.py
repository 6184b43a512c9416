"""``store.url`` (docs/postgresql.md, "Selecting the backend"): where a project's store lives, set only by
the user (config or environment), and never shown with its password."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers.common import run_memtree

from memtree_core.project_settings import load_settings
from memtree_core.store import StoreError
from memtree_core.store.postgres.url import backend_of, redact_url, store_url

SECRET = "s3cr3t-Pa55"


@pytest.mark.parametrize(("url", "shown"), [
    (f"postgresql://alice:{SECRET}@db.internal:5432/memtree", "postgresql://alice:***@db.internal:5432/memtree"),
    (f"postgres://alice:{SECRET}@x@db/memtree", "postgres://alice:***@db/memtree"),  # an unescaped @ in it
    (f"postgresql://alice@db/memtree?sslmode=require&password={SECRET}",
     "postgresql://alice@db/memtree?sslmode=require&password=***"),
    (f"postgresql:///memtree?host=/run/pg&PassWord={SECRET}", "postgresql:///memtree?host=/run/pg&PassWord=***"),
    ("postgresql://db/memtree", "postgresql://db/memtree"),
    (f"host=db password={SECRET}", "(not a URL; not shown)"),
    ("", ""),
])
def test_redact_url_hides_every_password(url: str, shown: str) -> None:
    assert redact_url(url) == shown
    assert SECRET not in redact_url(url)


def test_the_environment_wins_over_the_config() -> None:
    assert store_url("postgresql://a@cfg/db", {}) == "postgresql://a@cfg/db"
    assert store_url("postgresql://a@cfg/db", {"MEMTREE_STORE_URL": " postgresql://a@env/db "}) == \
        "postgresql://a@env/db"
    assert store_url("", {}) == ""


def test_backend_of_a_url() -> None:
    assert backend_of("") == "sqlite"
    assert backend_of("postgresql://a@db/x") == backend_of("POSTGRES://a@db/x") == "postgresql"
    with pytest.raises(StoreError, match="postgresql://user@host:5432/database") as err:
        backend_of(f"mysql://root:{SECRET}@db/x")
    assert SECRET not in str(err.value)
    with pytest.raises(StoreError):
        backend_of("db.internal")


def test_a_repository_cannot_point_the_store_at_a_server(home: Path, project: Path) -> None:
    (project / ".memtree.json").write_text(json.dumps({"store": {"url": "postgresql://evil@attacker/db"}}))
    loaded = load_settings(home, project, {"MEMTREE_HOME": str(home), "MEMTREE_LOAD_PLUGINS": ""})
    assert loaded.settings.store.url == ""
    assert any("store.url ignored" in w for w in loaded.warnings), loaded.warnings


def test_the_user_config_sets_it(home: Path, project: Path) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.json").write_text(json.dumps({"store": {"url": "postgresql://me@team-db/memtree"}}))
    loaded = load_settings(home, project, {"MEMTREE_HOME": str(home), "MEMTREE_LOAD_PLUGINS": ""})
    assert loaded.settings.store.url == "postgresql://me@team-db/memtree"
    env = {"MEMTREE_HOME": str(home), "MEMTREE_LOAD_PLUGINS": "", "MEMTREE_STORE__URL": "postgresql://me@env/x"}
    assert load_settings(home, project, env).settings.store.url == "postgresql://me@env/x"  # the settings' form


def test_memtree_info_shows_the_url_without_its_password(home: Path, project: Path) -> None:
    env = {"MEMTREE_STORE_URL": f"postgresql://alice:{SECRET}@db.internal/memtree"}
    out = run_memtree("info", "--json", "--project", str(project), env=env)
    assert out.returncode == 0, out.stderr
    info = json.loads(out.stdout)
    assert info["store_url"] == "postgresql://alice:***@db.internal/memtree"
    text = run_memtree("info", "--project", str(project), env=env)
    assert SECRET not in out.stdout + out.stderr + text.stdout + text.stderr
    assert "store     postgresql://alice:***@db.internal/memtree  (store.url)" in text.stdout
