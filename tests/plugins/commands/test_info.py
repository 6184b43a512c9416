"""`memtree info --json`: the interface outside checks rely on, on this machine's Python."""

from __future__ import annotations

import json
from pathlib import Path

from helpers.common import run_memtree

from memtree_plugins import BUILTINS


def test_info_json_has_the_documented_fields(home: Path, git_project: Path) -> None:
    out = run_memtree("info", "--json", "--project", str(git_project))
    assert out.returncode == 0, out.stderr
    info = json.loads(out.stdout)
    assert len(info["project_hash"]) == 16 and info["project_root"] == str(git_project)
    assert info["store"].endswith(f"{info['project_hash']}/store.db")
    assert info["socket"].endswith("ingest.sock")
    vs = info["vector_search"]
    assert isinstance(vs["available"], bool)
    # sqlean.py is a dependency, so sqlite-vec really loads even where the stdlib sqlite3 cannot.
    assert vs["available"] is True and vs["sqlite_vec"].startswith("v"), vs
    assert {p["name"]: p["status"] for p in info["plugins"]} == {name: "loaded" for name in BUILTINS}
    assert all(p["source"].startswith("builtin:") for p in info["plugins"])
    assert info["daemon"] == {"running": False, "pid": None, "version": None}
    assert info["capture"]["bash"] is True and info["capture"]["replace"] is False
    assert info["degraded"] == [] or all(isinstance(d, str) for d in info["degraded"])
    # The text form lists exactly the JSON's languages chunked by definition, Python among them.
    assert "python" in info["code_chunking"]["by_definition"]
    text = run_memtree("info", "--project", str(git_project)).stdout
    (line,) = [x for x in text.splitlines() if x.startswith("chunking  by definition: ")]
    listed = line.removeprefix("chunking  by definition: ").split(";")[0].split(", ")
    assert listed == info["code_chunking"]["by_definition"]


def test_stats_on_a_directory_that_never_was_a_project_makes_no_store(home: Path, project: Path) -> None:
    out = run_memtree("stats", "--project", str(project))
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith(f"no store yet for {project}")
    assert json.loads(run_memtree("stats", "--json", "--project", str(project)).stdout)["exists"] is False
    assert not list(home.rglob("store.db"))


def test_info_text_names_what_is_degraded_and_why(home: Path, project: Path) -> None:
    Path(home).mkdir(parents=True, exist_ok=True)
    (home / "config.json").write_text(json.dumps({"capture": {"bash": False}}))
    out = run_memtree("info", "--project", str(project), env={"MEMTREE_SQLITE": "stdlib"})
    assert out.returncode == 0, out.stderr
    assert "Bash capture is off (capture.bash = false)" in out.stdout
    import sqlite3

    if not hasattr(sqlite3.Connection, "enable_load_extension"):
        assert "vector search off: this Python's sqlite3 was built without extension loading" in out.stdout


def test_info_and_stats_on_a_server_store_read_it_from_the_server(home: Path, project: Path,
                                                                   postgres_url: str) -> None:
    """With ``MEMTREE_STORE_URL`` naming a PostgreSQL, ``memtree info`` and ``memtree stats`` describe the
    server's store: pgvector and its vectors, sizes from the server, the URL without its password; no local
    file is made."""
    (project / "a.py").write_text("def add_book(title):\n    return title\n")
    env = {"MEMTREE_STORE_URL": postgres_url}
    out = run_memtree("index", "--project", str(project), env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    info = json.loads(run_memtree("info", "--json", "--project", str(project), env=env).stdout)
    assert info["store_exists"] is True and info["store_url"] and "sqlite_vec" not in info["vector_search"]
    assert info["vector_search"]["available"] is True and info["vector_search"]["engine"] == "pgvector"
    assert info["vector_index"]["codes"] == 0
    text = run_memtree("info", "--project", str(project), env=env).stdout
    assert "vectors   available (pgvector on the server)" in text
    stats = json.loads(run_memtree("stats", "--json", "--project", str(project), env=env).stdout)
    assert stats["nodes"]["file"] == {"live": 1} and stats["db_bytes"] > 0
    text = run_memtree("stats", "--project", str(project), env=env).stdout
    assert text.startswith("store  postgresql://"), text
    assert not list(home.rglob("store.db"))
