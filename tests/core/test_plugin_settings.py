"""Per-plugin settings (``memtree_settings_model``): a plugin's own pydantic model under
``plugins.config.<name>``, layered like every setting, with the untrusted-repository rules; seen through the
real CLI with a third-party plugin installed as a real entry-point distribution."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from helpers.common import MEMTREE
from helpers.plugin_dists import env_with, make_dist

from memtree_core.app import App

ACME = '''
from typing import Annotated

from pydantic import Field

from memtree_core.hookspecs import hookimpl
from memtree_core.plugin_settings import REPO_SAFE, PluginSettings


class AcmeSettings(PluginSettings):
    max_hits: Annotated[int, Field(ge=1, le=50), REPO_SAFE] = 10
    endpoint: str = "http://127.0.0.1:9"
    verbose: bool = False


@hookimpl
def memtree_settings_model():
    return AcmeSettings
'''

NO_DEFAULT = '''
from memtree_core.hookspecs import hookimpl
from memtree_core.plugin_settings import PluginSettings


class Needy(PluginSettings):
    token: str


@hookimpl
def memtree_settings_model():
    return Needy
'''


@pytest.fixture
def env(home: Path, tmp_path: Path) -> dict[str, str]:
    site = tmp_path / "site"
    make_dist(site, "memtree-acme", "1.0.0", {"acme": ACME})
    return env_with(site, MEMTREE_HOME=str(home))


def plugins_json(project: Path, env: dict[str, str]) -> tuple[int, dict[str, dict], str]:
    out = subprocess.run([MEMTREE, "plugins", "--json", "--project", str(project)], env=env, capture_output=True,
                         text=True, timeout=60)
    report = {p["name"]: p for p in json.loads(out.stdout)} if out.stdout else {}
    return out.returncode, report, out.stderr


def write(path: Path, value: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value))


def test_defaults_are_shown_with_the_plugin(env: dict[str, str], project: Path) -> None:
    code, report, err = plugins_json(project, env)
    assert code == 0, err
    assert report["acme"]["settings"] == {"maxHits": 10, "endpoint": "http://127.0.0.1:9", "verbose": False}
    assert report["wrappers"]["settings"] == {"grepEngine": "auto"}  # a built-in declares its own too
    assert "settings" not in report["tokens"]


def test_layers_and_what_a_repository_may_set(env: dict[str, str], home: Path, project: Path) -> None:
    write(home / "config.json", {"plugins": {"config": {"acme": {"endpoint": "http://10.0.0.5", "verbose": True,
                                                                 "maxHits": 5}}}})
    write(project / ".memtree.json", {"plugins": {"config": {"acme": {"maxHits": 20, "endpoint": "http://evil",
                                                                      "verbose": False}}}})
    code, report, err = plugins_json(project, env)
    assert code == 0, err
    acme = report["acme"]
    assert acme["settings"] == {"maxHits": 20, "endpoint": "http://10.0.0.5", "verbose": True}
    refused = acme["refused_settings"]
    assert len(refused) == 2 and all(str(project / ".memtree.json") in r for r in refused)
    assert any("plugins.config.acme.endpoint ignored" in r and "repo-safe" in r for r in refused)
    assert any("plugins.config.acme.verbose ignored" in r for r in refused)
    # the environment wins over the repository, named by its variable
    code, report, _ = plugins_json(project, {**env, "MEMTREE_PLUGINS__CONFIG__ACME__MAX_HITS": "7"})
    assert report["acme"]["settings"]["maxHits"] == 7


def test_a_repositorys_out_of_bound_value_is_dropped_with_its_reason(env: dict[str, str], project: Path) -> None:
    write(project / ".memtree.json", {"plugins": {"config": {"acme": {"maxHits": 500, "nope": 1}}}})
    code, report, err = plugins_json(project, env)
    assert code == 0, err
    assert report["acme"]["settings"]["maxHits"] == 10
    text = " ".join(report["acme"]["refused_settings"])
    assert "plugins.config.acme.maxHits: input should be less than or equal to 50 (got 500)" in text
    assert "plugins.config.acme: unknown key 'nope' (acme's settings: maxHits, endpoint, verbose)" in text
    info = subprocess.run([MEMTREE, "info", "--json", "--project", str(project)], env=env, capture_output=True,
                          text=True, timeout=60)
    assert any("maxHits" in w for w in json.loads(info.stdout)["config_warnings"]), info.stderr


@pytest.mark.parametrize(("layer", "value", "expected"), [
    ({"verbose": "yes"}, None, "plugins.config.acme.verbose: expected true or false"),
    ({"maxHit": 3}, None, "plugins.config.acme: unknown key 'maxHit' (acme's settings: maxHits, endpoint, verbose)"),
    ({"maxHits": 0}, None, "plugins.config.acme.maxHits: input should be greater than or equal to 1 (got 0)"),
    (None, "1.5", "environment variable MEMTREE_PLUGINS__CONFIG__ACME__MAX_HITS: plugins.config.acme.maxHits"),
    (None, "", "MEMTREE_PLUGINS__CONFIG__ACME: name a plugin and one of its keys"),
])
def test_a_bad_value_of_the_users_own_is_one_line_naming_the_key(env: dict[str, str], home: Path, project: Path,
                                                                  layer: dict | None, value: str | None,
                                                                  expected: str) -> None:
    if layer is not None:
        write(home / "config.json", {"plugins": {"config": {"acme": layer}}})
    if value:
        env = {**env, "MEMTREE_PLUGINS__CONFIG__ACME__MAX_HITS": value}
    elif value is not None:
        env = {**env, "MEMTREE_PLUGINS__CONFIG__ACME": "3"}
    code, _, err = plugins_json(project, env)
    assert code == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert expected in err, err


def test_a_strict_boolean_from_the_environment(env: dict[str, str], project: Path) -> None:
    code, report, err = plugins_json(project, {**env, "MEMTREE_PLUGINS__CONFIG__ACME__VERBOSE": "1"})
    assert code == 0 and report["acme"]["settings"]["verbose"] is True, err
    code, _, err = plugins_json(project, {**env, "MEMTREE_PLUGINS__CONFIG__ACME__VERBOSE": "on"})
    assert code == 2 and "expected true or false" in err


def test_settings_of_a_plugin_that_is_not_installed_are_a_warning(env: dict[str, str], home: Path,
                                                                  project: Path) -> None:
    write(home / "config.json", {"plugins": {"config": {"acmee": {"maxHits": 3}}}})
    info = subprocess.run([MEMTREE, "info", "--json", "--project", str(project)], env=env, capture_output=True,
                          text=True, timeout=60)
    assert info.returncode == 0, info.stderr
    assert any("plugins.config.acmee ignored: no installed plugin of that name" in w
               for w in json.loads(info.stdout)["config_warnings"])


def test_a_model_without_defaults_fails_its_plugin_only(home: Path, tmp_path: Path, project: Path) -> None:
    site = tmp_path / "site"
    make_dist(site, "memtree-needy", "0.1.0", {"needy": NO_DEFAULT})
    code, report, _ = plugins_json(project, env_with(site, MEMTREE_HOME=str(home)))
    assert code == 1 and report["needy"]["status"] == "failed"
    assert "token have no default" in report["needy"]["error"]
    assert report["wrappers"]["status"] == "loaded"


def test_the_builtin_grep_engine_setting_reaches_grep(home: Path, project: Path) -> None:
    write(home / "config.json", {"plugins": {"config": {"wrappers": {"grepEngine": "python"}}}})
    (project / "a.txt").write_text("needle here\n")
    app = App.open(project)
    try:
        assert app.plugin_settings("wrappers").grep_engine == "python"
        result = app.plugins.tools["grep"].build(app)("needle")
    finally:
        app.close()
    assert result.engine == "python", result
