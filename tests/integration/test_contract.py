"""The plugin contract, held by a third-party plugin installed the way a user installs one.

``examples/memtree-contract-probe`` is pip-installed (built from its own ``pyproject.toml``) into a fresh
virtual environment that reaches this environment's packages (memtree among them) through a ``.pth`` file,
then driven through the real pieces: an App opened in that environment, ``memtree plugins`` and ``memtree
info``.  Each of its items leans on one clause of the contract (see its README):

1. a chunker whose chunks do not tile the file (the next chunker is used), or an item missing a member of its
   protocol, is reported failed, with the reason, on its plugin's line of ``memtree plugins`` and ``memtree info``;
2. every item gets its own plugin's validated settings through ``configure(settings, app)``;
3. optional members the host reads are declared (``tests/core/test_plugin_context.py`` checks the source; here a
   chunker's ``availability`` reaches ``memtree info``);
4. one order for every kind, pluggy's: a ``tryfirst`` plugin's command policy runs first;
5. a plugin object that cannot be hashed loads, and breaks no other plugin;
6. at run time an item is handed exactly what ``Context`` declares.
"""

from __future__ import annotations

import json
import os
import shutil
import site
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers.common import MEMTREE

REPO = Path(__file__).resolve().parents[2]
PROBE = REPO / "examples" / "memtree-contract-probe"
PLUGINS = "probe,probe-first,probe-object"

# Run in the fresh environment: what an App opened there does with the probe's items.
SCRIPT = r'''
import json, sys
from pathlib import Path

from memtree_core.app import App
from memtree_core.context import Context
from memtree_core.daemon.coordinator import Coordinator
from memtree_plugins.lib.file_versions import chunk_text

project = Path(sys.argv[1])
app = App.open(project)
out = {}
text = "".join(f"line {i}\n" for i in range(1, 6))
notes = []
chunks, name = chunk_text(app.context, str(project / "notes.gappy"), text, notes)
out["gappy"] = {"chunker": name, "spans": [[c.start_line, c.end_line] for c in chunks], "notes": notes,
                "registered": "probe-gappy" in app.plugins.chunkers}
chunks, name = chunk_text(app.context, str(project / "notes.probe"), text, [])
out["lines"] = {"chunker": name, "spans": [[c.start_line, c.end_line] for c in chunks]}
out["settings"] = {
    kind: [type(item.settings).__name__, item.settings.label, item.settings.width]
    for kind, item in (("chunker", app.plugins.chunkers["probe-lines"]), ("filter", app.plugins.filters["probe-filter"]),
                       ("walker", app.plugins.walkers["probe-peek"]))}
out["policies"] = app.plugins.command_policies.names()
out["denied"] = app.command_denied("probe-deny everything")
out["filters"] = app.plugins.filters.names()
out["walker"] = Coordinator(app).run_once("probe-peek")["probe-peek"]
out["context"] = [type(app.context).__name__, isinstance(app.context, Context)]
app.close()
print(json.dumps(out))
'''


def _run(cmd: list[str], env: dict[str, str], timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def probe(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """Install the probe into a fresh venv and gather what memtree does with it (one App, ``memtree plugins``
    in JSON and text, ``memtree info --json``)."""
    work = tmp_path_factory.mktemp("contract-probe")
    src = work / "memtree-contract-probe"
    shutil.copytree(PROBE, src, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    venv = work / "venv"
    r = _run([getattr(sys, "_base_executable", sys.executable), "-m", "venv", "--without-pip", str(venv)], dict(os.environ))
    assert r.returncode == 0, r.stderr
    python = str(venv / "bin" / "python")
    # pip of this environment installs into the fresh one; the build runs in pip's own isolated environment.
    r = _run([sys.executable, "-m", "pip", "--disable-pip-version-check", "--python", python, "install", "--quiet",
              "--no-deps", str(src)], dict(os.environ), timeout=300)
    assert r.returncode == 0, f"pip install of the probe failed:\n{r.stderr}"
    # Only now (the build must not see them) this environment's packages, memtree's included.
    purelib = _run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], dict(os.environ))
    (Path(purelib.stdout.strip()) / "parent-environment.pth").write_text(
        "import site; " + "; ".join(f"site.addsitedir({p!r})" for p in site.getsitepackages()) + "\n")

    home = work / "home"
    project = work / "proj"
    project.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMTREE_") and k != "PYTHONPATH"}
    env.update(MEMTREE_HOME=str(home), MEMTREE_LOAD_PLUGINS=PLUGINS, MEMTREE_DAEMON__IDLE_TIMEOUT_S="20",
               MEMTREE_PLUGINS__CONFIG__PROBE__LABEL="from-env", MEMTREE_PLUGINS__CONFIG__PROBE__WIDTH="3")
    where = _run([python, "-c", "import memtree_probe, memtree_core; print(memtree_probe.__file__)"], env)
    assert where.returncode == 0 and str(venv) in where.stdout, where

    ran = _run([python, "-c", SCRIPT, str(project)], env)
    assert ran.returncode == 0, ran.stderr
    memtree = [python, MEMTREE]
    plugins = _run([*memtree, "plugins", "--json", "--project", str(project)], env)
    text = _run([*memtree, "plugins", "--project", str(project)], env)
    info = _run([*memtree, "info", "--json", "--project", str(project)], env)
    assert info.returncode == 0, info.stderr
    yield {"app": json.loads(ran.stdout), "plugins": {p["name"]: p for p in json.loads(plugins.stdout)},
           "plugins_code": plugins.returncode, "plugins_text": text.stdout, "info": json.loads(info.stdout)}


def test_a_chunker_that_breaks_the_tiling_rule_is_reported_failed_with_the_reason(probe: dict[str, Any]) -> None:
    gappy = probe["app"]["gappy"]
    assert gappy["chunker"] == "window" and gappy["spans"] == [[1, 5]]  # the next matching chunker's
    assert not gappy["registered"]
    assert "chunk 2 starts at line 3, expected 2" in gappy["notes"][0]
    # reported on the plugin's line in the other processes too (the failure is recorded for the project)
    failed = {f["name"]: f for f in probe["plugins"]["probe"]["failed_items"]}["probe-gappy"]
    assert failed["kind"] == "chunkers"
    assert "broke the chunker contract" in failed["error"] and "chunk 2 starts at line 3" in failed["error"]
    assert probe["plugins"]["probe"]["status"] == "loaded" and probe["plugins_code"] == 1
    assert "failed: chunkers probe-gappy: broke the chunker contract" in probe["plugins_text"]
    (listed,) = [p for p in probe["info"]["plugins"] if p["name"] == "probe"]
    assert "probe-gappy" in [f["name"] for f in listed["failed_items"]]
    assert any("'probe-gappy' failed" in w for w in probe["info"]["degraded"])


def test_an_item_missing_a_member_of_its_protocol_is_reported_failed(probe: dict[str, Any]) -> None:
    failed = {f["name"]: f for f in probe["plugins"]["probe"]["failed_items"]}["probe-half-selector"]
    assert failed == {"kind": "selectors", "name": "probe-half-selector",
                      "error": "not a Selector (memtree_core.types): it has no select"}
    assert "selectors" not in probe["plugins"]["probe"]["provides"]
    assert "failed: selectors probe-half-selector: not a Selector" in probe["plugins_text"]
    assert any("'probe-half-selector' failed" in w for w in probe["info"]["degraded"])


def test_every_item_gets_its_plugins_validated_settings(probe: dict[str, Any]) -> None:
    assert probe["app"]["settings"] == {kind: ["ProbeSettings", "from-env", 3] for kind in ("chunker", "filter", "walker")}
    assert probe["app"]["lines"] == {"chunker": "probe-lines", "spans": [[1, 3], [4, 5]]}  # width 3, from settings
    assert probe["app"]["walker"]["configured_width"] == 3


def test_a_declared_optional_member_reaches_memtree_info(probe: dict[str, Any]) -> None:
    chunking = probe["info"]["code_chunking"]
    assert "probe" in chunking["by_definition"]
    assert chunking["windows"]["probe-binary"] == "no grammar for it here"


def test_one_order_for_every_kind_a_tryfirst_plugin_runs_first(probe: dict[str, Any]) -> None:
    policies = probe["app"]["policies"]
    assert policies[:2] == ["probe-first", "probe-normal"], policies
    assert policies.index("probe-normal") < policies.index("env-dump")  # the built-ins (trylast) last
    assert probe["app"]["denied"] == "probe-first"  # every policy runs in that order; the first reason wins


def test_an_unhashable_plugin_object_loads_and_breaks_no_other_plugin(probe: dict[str, Any]) -> None:
    statuses = {name: p["status"] for name, p in probe["plugins"].items()}
    assert set(statuses.values()) == {"loaded"}, statuses
    assert probe["plugins"]["probe-object"]["provides"] == {"filters": ["probe-object-filter"]}
    assert "probe-object-filter" in probe["app"]["filters"]


def test_an_item_is_handed_exactly_what_context_declares(probe: dict[str, Any]) -> None:
    assert probe["app"]["context"] == ["HostContext", True]
    peek = probe["app"]["walker"]
    assert peek["store_nodes_visible"] == 1  # the store, handed through as it is
    assert {k: v for k, v in peek.items() if k.startswith("has_") or k == "plugins_pm"} == {
        "has_close": 0, "has_damaged": 0, "has_mark_damaged": 0, "has__store": 0, "plugins_pm": 0}
