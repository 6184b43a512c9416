"""The MCP server end to end: the SDK's ``stdio_client`` + ``ClientSession`` against ``memtree serve``, a real
daemon behind it, real tools.

The helpers (a client session on a project, the daemon's pids, a small third-party tool plugin installed
as a real distribution) are in ``tests/helpers/daemon.py``; the daemon guard every test that starts a daemon
uses is a fixture in ``conftest.py``.
"""

from __future__ import annotations

import json
import os
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
from helpers.daemon import mcp_session, open_store, run_async, text_of

REPO = Path(__file__).resolve().parents[2]
MEMTREE = str(Path(sys.executable).parent / "memtree")

SAMPLE = textwrap.dedent('''\
    """A small module for the memtree end-to-end tests."""


    def alpha(x):
        """Return x doubled."""
        return x * 2


    class Zebra:
        """Stripes."""

        def gallop(self):
            return "zoom quokkaword"
''')

def _require(tools: set[str], *names: str) -> None:
    missing = [n for n in names if n not in tools]
    if missing:
        raise AssertionError(f"tool(s) {', '.join(missing)} not registered: is a built-in plugin failing?")


def _structured(result: Any) -> dict[str, Any]:
    assert not result.is_error, text_of(result)
    assert isinstance(result.structured_content, dict), "tools return a pydantic model as structured content"
    return result.structured_content


def _ids_in(value: Any) -> list[str]:
    """Every node id (26-char ULID) in a structured result, in order."""
    found: list[str] = []

    def walk(v: Any, key: str = "") -> None:
        if isinstance(v, dict):
            for k, x in v.items():
                walk(x, k)
        elif isinstance(v, list):
            for x in v:
                walk(x, key)
        elif isinstance(v, str) and len(v) == 26 and v.isalnum() and v.isupper() and "id" in key:
            found.append(v)

    walk(value)
    return found


def test_every_registered_tool_is_listed_with_annotations(home: Path, project: Path, env: dict[str, str],
                                                         daemon_guard: list[int], tool_plugin_site: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    from memtree_core.app import App

    monkeypatch.syspath_prepend(str(tool_plugin_site))  # so this process sees the same plugin set
    expected = App.open(project, environ=env).plugins.tools

    async def main() -> None:
        async with mcp_session(project, env) as s:
            listed = {t.name: t for t in (await s.list_tools()).tools}
            assert set(listed) == set(expected.names())
            for spec in expected:
                tool = listed[spec.name]
                assert tool.annotations is not None
                assert tool.annotations.read_only_hint is spec.read_only
                assert tool.annotations.destructive_hint is spec.destructive
                assert tool.annotations.open_world_hint is spec.open_world
                assert tool.description
            retrieval = {"search", "neighbors", "path_to_root", "recent", "compose", "get"} & set(listed)
            for name in retrieval:
                assert listed[name].annotations.read_only_hint is True, f"{name} only reads"

    run_async(main)


def test_read_grep_get_search_through_mcp(home: Path, project: Path, backend: str, env: dict[str, str],
                                          daemon_guard: list[int]) -> None:
    src = project / "sample.py"
    src.write_text(SAMPLE)

    async def main() -> None:
        async with mcp_session(project, env) as s:
            tools = {t.name for t in (await s.list_tools()).tools}
            _require(tools, "read", "grep", "get", "search")
            read = await s.call_tool("read", {"path": str(src)})
            assert "def alpha(x):" in text_of(read)
            read_ids = _ids_in(_structured(read))
            assert read_ids, "read names the nodes it stored"

            got = await s.call_tool("get", {"node_id": read_ids[0]})
            assert not got.is_error, text_of(got)
            assert text_of(got).strip()

            grep = await s.call_tool("grep", {"pattern": "quokkaword", "path": str(project)})
            assert "quokkaword" in text_of(grep)
            assert _ids_in(_structured(grep))

            found = await s.call_tool("search", {"query": "quokkaword"})
            assert _ids_in(_structured(found)), text_of(found)

            nothing = await s.call_tool("search", {"query": "zzqqxxnotaword"})
            assert not nothing.is_error
            assert not _ids_in(_structured(nothing))

            # The ``filters`` object narrows like the flat parameters (grep stored a tool_output too).
            kinds = {}
            for kind in ("tool_output", "file_chunk"):
                hits = _structured(await s.call_tool("search", {"query": "quokkaword", "filters": {"kind": kind}}))
                kinds[kind] = {h["kind"] for h in hits["hits"]}
            assert kinds == {"tool_output": {"tool_output"}, "file_chunk": {"file_chunk"}}
            listed = {t.name: t for t in (await s.list_tools()).tools}
            assert "filters" in listed["search"].input_schema["properties"]

            # An argument a tool does not take is an error that names it, never silently ignored.
            for name, args, bad in [("search", {"query": "quokkaword", "kinds": "file"}, "'kinds'"),
                                    ("get", {"node_id": read_ids[0], "offest": 5}, "'offest'"),
                                    ("read", {"path": str(src), "line": "1-2"}, "'line'")]:
                assert listed[name].input_schema.get("additionalProperties") is False
                out = await s.call_tool(name, args)
                assert out.is_error, name
                assert bad in text_of(out) and "it takes:" in text_of(out)
            typo = await s.call_tool("search", {"query": "quokkaword", "filters": {"knd": "file"}})
            assert typo.is_error and "knd" in text_of(typo)
            twice = await s.call_tool("search", {"query": "quokkaword", "kind": "file",
                                                 "filters": {"kind": "tool_output"}})
            assert twice.is_error and "given twice" in text_of(twice)

    run_async(main)


def test_bash_neighbors_path_to_root_recent_compose(home: Path, project: Path, backend: str, env: dict[str, str],
                                                    daemon_guard: list[int]) -> None:
    src = project / "sample.py"
    src.write_text(SAMPLE)

    async def main() -> None:
        async with mcp_session(project, env) as s:
            tools = {t.name for t in (await s.list_tools()).tools}
            _require(tools, "bash", "read", "neighbors", "path_to_root", "recent", "compose")
            bash = await s.call_tool("bash", {"command": "echo memtree-bash-ok"})
            assert "memtree-bash-ok" in text_of(bash)
            assert _ids_in(_structured(bash))

            read = _structured(await s.call_tool("read", {"path": str(src)}))
            chunk_ids = _ids_in(read)
            db = open_store(project)
            kinds = dict(db.execute("SELECT id, kind FROM nodes").fetchall())
            chunk = next(i for i in chunk_ids if kinds.get(i) == "file_chunk")
            parent = db.execute("SELECT parent_id FROM nodes WHERE id = ?", (chunk,)).fetchone()[0]
            db.close()

            spine = await s.call_tool("path_to_root", {"node_id": chunk})
            assert parent in _ids_in(_structured(spine))

            near = await s.call_tool("neighbors", {"node_id": chunk})
            assert parent in _ids_in(_structured(near))

            recent = await s.call_tool("recent", {})
            assert chunk in _ids_in(_structured(recent))

            composed = await s.call_tool("compose", {"node_ids": [chunk], "budget_tokens": 200})
            assert not composed.is_error, text_of(composed)
            assert "200" in json.dumps(_structured(composed)), "the manifest reports the budget"

            bad = await s.call_tool("compose", {"node_ids": [chunk], "budget_tokens": 0})
            assert bad.is_error, "budget <= 0 is a tool error"
            missing = await s.call_tool("get", {"node_id": "01ARZ3NDEKTSV4RRFFQ69G5FAV"})
            assert missing.is_error and text_of(missing), "an unknown node id is a clear tool error"
            again = await s.call_tool("bash", {"command": "echo still-up"})
            assert "still-up" in text_of(again)

    run_async(main)


def test_edit_invalidates_cached_chunks_through_mcp(home: Path, project: Path, backend: str, env: dict[str, str],
                                                    daemon_guard: list[int]) -> None:
    src = project / "sample.py"
    src.write_text(SAMPLE)

    async def main() -> None:
        async with mcp_session(project, env) as s:
            _require({t.name for t in (await s.list_tools()).tools}, "read")
            first = _ids_in(_structured(await s.call_tool("read", {"path": str(src)})))
            again = _ids_in(_structured(await s.call_tool("read", {"path": str(src)})))
            assert set(again) == set(first), "an unchanged file reuses its nodes"
            src.write_text(SAMPLE.replace("x * 2", "x * 3"))
            os.utime(src, ns=(time.time_ns() + 2_000_000_000,) * 2)  # mtime moves even on coarse clocks
            third = await s.call_tool("read", {"path": str(src)})
            assert "x * 3" in text_of(third)
            new_ids = set(_ids_in(_structured(third)))
            assert new_ids - set(first), "a changed file gets new nodes"

        db = open_store(project)
        try:
            status = dict(db.execute("SELECT id, status FROM nodes WHERE kind = 'file_chunk'").fetchall())
            old_chunks = [i for i in first if i in status]
            assert old_chunks and all(status[i] in ("stale", "superseded") for i in old_chunks), status
            edges = db.execute("SELECT src_id, dst_id FROM edges WHERE kind = 'supersedes'").fetchall()
            assert any(dst in old_chunks and src in new_ids for src, dst in edges), edges
        finally:
            db.close()

    run_async(main)
