"""The ``note`` tool and the ``note_staleness`` walker: through a real MCP session to a real daemon, and on a
real store."""

from __future__ import annotations

import json
import random
import string
from pathlib import Path

import pytest
from helpers.daemon import mcp_session, open_store, run_async, text_of

from memtree_plugins.notes.notes import MAX_CHARS, add_note
from memtree_plugins.notes.staleness import NoteStaleness

_rng = random.Random(29)
TOKEN = "ghp_" + "".join(_rng.choice(string.ascii_letters + string.digits) for _ in range(36))


def test_a_note_is_stored_redacted_linked_found_and_its_neighbour_knows_it(
        home: Path, project: Path, env: dict[str, str], daemon_guard: list[int]) -> None:
    (project / "backoff.py").write_text("def backoff(attempt):\n    return min(60, 2 ** attempt)\n" * 30)

    async def session() -> dict:
        async with mcp_session(project, env) as s:
            read = await s.call_tool("read", {"path": "backoff.py"})
            assert not read.is_error, text_of(read)
            target = read.structured_content["chunks"][0]["id"]
            stored = await s.call_tool("note", {
                "text": f"The retry delay doubles per attempt, capped at a minute; the deploy key is {TOKEN}",
                "about": [target, "no-such-node"], "kind": "observation"})
            assert not stored.is_error, text_of(stored)
            found = await s.call_tool("search", {"query": "retry delay doubles", "mode": "keyword"})
            around = await s.call_tool("neighbors", {"node_id": target, "edge_kinds": ["references"]})
            tools = [t.name for t in (await s.list_tools()).tools]
            return {"target": target, "stored": stored.structured_content, "text": text_of(stored),
                    "found": found.structured_content, "around": around.structured_content, "tools": tools}

    got = run_async(session)
    note = got["stored"]
    assert "note" in got["tools"]
    assert note["kind"] == "observation" and note["about"] == [got["target"]] and note["missing"] == ["no-such-node"]
    assert note["redacted"] == 1 and "not found (not linked): no-such-node" in got["text"]
    assert note["id"] in [hit["id"] for hit in got["found"]["hits"]][:3]
    assert note["id"] in json.dumps(got["around"])
    conn = open_store(project)
    content, status, kind = conn.execute("SELECT content, status, kind FROM nodes WHERE id = ?",
                                         (note["id"],)).fetchone()
    edges = conn.execute("SELECT dst_id, kind FROM edges WHERE src_id = ?", (note["id"],)).fetchall()
    conn.close()
    assert TOKEN not in content and "[REDACTED:" in content and "retry delay doubles" in content
    assert (status, kind) == ("live", "observation")  # live at once: a deliberate note is never filtered out
    assert edges == [(got["target"], "references")]


@pytest.mark.parametrize(("args", "said"), [
    ({"text": "   "}, "text is empty"),
    ({"text": "x", "kind": "todo"}, "kind must be one of note, observation"),
    ({"text": "x" * (MAX_CHARS + 1)}, "more than 20,000"),
])
def test_a_note_that_cannot_be_stored_says_why_and_stores_nothing(app, args: dict, said: str) -> None:
    before = app.store.stats()
    with pytest.raises(ValueError, match=said):
        add_note(app, args["text"], about=[], kind=args.get("kind", "note"))
    assert app.store.stats() == before


def test_a_note_goes_stale_when_what_it_is_about_changes(app) -> None:
    store = app.store
    chunk = store.insert_node("file_chunk", "def backoff(): ...", status_="live", source_uri="file:///x/backoff.py")
    other = store.insert_node("file_chunk", "def parse(): ...", status_="live", source_uri="file:///x/parse.py")
    about_chunk = add_note(app, "backoff caps at a minute", about=[chunk.id])
    about_other = add_note(app, "parse is strict", about=[other.id])
    free = add_note(app, "remember to bump the version", about=[])
    walker = NoteStaleness()
    assert walker.has_work(app) and walker.run(app) == {"notes_marked_stale": 0}
    store.transition([chunk.id], "stale", reason="staleness:mtime advanced")
    assert walker.run(app) == {"notes_marked_stale": 1}
    status = {n.id: n.status for n in store.get_nodes([about_chunk.id, about_other.id, free.id]).values()}
    assert status == {about_chunk.id: "stale", about_other.id: "live", free.id: "live"}
    assert walker.run(app) == {"notes_marked_stale": 0}
