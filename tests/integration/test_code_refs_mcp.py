"""Code references through a real MCP session: files read with the ``read`` tool (the caller's file first,
so its names resolve only once the helper's file is stored), then ``neighbors`` out and in, and
``path_to_root``, as an agent calls them."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.daemon import mcp_session, run_async, text_of

from memtree_core.app import App

HELPERS = '''def zone_rate(zone):
    return {"eu": 4.5}.get(zone, 12.0)
'''

MAIN = '''from helpers import zone_rate


def quote(zone):
    return zone_rate(zone) * 2
'''


def test_read_files_then_callees_and_callers_through_mcp(home: Path, project: Path, backend: str,
                                                        env: dict[str, str], daemon_guard: list[int],
                                                        request: pytest.FixtureRequest) -> None:
    """On each store (``backend`` before ``env``: the daemon's environment names the server)."""
    (project / "helpers.py").write_text(HELPERS)
    (project / "main.py").write_text(MAIN)

    async def main() -> None:
        async with mcp_session(project, env) as s:
            for name in ("main.py", "helpers.py"):
                got = await s.call_tool("read", {"path": str(project / name)})
                assert not got.is_error, text_of(got)
            app = App.open(project)  # the daemon's store, opened as another process opens it
            try:
                ids = dict(app.store.query("SELECT json_extract(metadata, '$.symbol'), id FROM nodes WHERE "
                                           "kind = 'file_chunk' AND status = 'live'"))
            finally:
                app.close()
            out = await s.call_tool("neighbors", {"node_id": ids["quote"], "direction": "out"})
            assert not out.is_error, text_of(out)
            listed = out.structured_content["neighbors"]
            assert [(n["id"], n["rels"]) for n in listed] == [(ids["zone_rate"], ["calls"])]
            into = await s.call_tool("neighbors", {"node_id": ids["zone_rate"], "direction": "in"})
            assert ids["quote"] in {n["id"] for n in into.structured_content["neighbors"]}
            assert "[calls]" in text_of(into)
            bad = await s.call_tool("neighbors", {"node_id": ids["quote"], "direction": "sideways"})
            assert bad.is_error and "direction must be one of" in text_of(bad)

    run_async(main)
