"""A degraded state (keyword search only) is said once per MCP session, in a few words, never per result."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
from helpers.common import closed_port
from helpers.daemon import mcp_session, run_async, text_of

from memtree_core.daemon.tools import Context, wrap_tool
from memtree_core.types import ToolSpec
from memtree_plugins.lib.once import first_time


def _notes(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("note: ")]


def test_keyword_only_is_said_at_a_sessions_first_search_only(
        home: Path, project: Path, env: dict[str, str], daemon_guard: list[int]) -> None:
    env = {**env, "MEMTREE_EMBEDDING_MODEL": "no-such-embedder",
           "MEMTREE_OLLAMA_URL": f"http://127.0.0.1:{closed_port()}"}

    async def session_notes() -> list[list[str]]:
        out = []
        async with mcp_session(project, env) as s:
            for query in ("alpha", "beta", "gamma"):
                result = await s.call_tool("search", {"query": query})
                assert not result.is_error, text_of(result)
                out.append(_notes(text_of(result)))
        return out

    first = run_async(session_notes)
    (note,) = first[0]
    assert note.startswith("note: keyword only: no embedder is available") and "(details: memtree info)" in note
    assert len(note) <= 100  # a few words (~25 tokens), the details are memtree info's
    assert first[1:] == [[], []]
    assert run_async(session_notes)[0] == first[0]  # a new session is told again


def test_a_tool_that_asks_for_the_request_context_gets_it_and_the_schema_does_not_show_it() -> None:
    seen: list[Any] = []

    def probe(x: int, memtree_request_context: Any = None) -> str:
        seen.append(memtree_request_context)
        return str(x)

    class _App:
        state: dict[str, Any] = {}  # noqa: RUF012 - what the wrapper notes activity in

        class paths:  # noqa: N801 - the attribute the wrapper reads
            log = "/dev/null"

    tool = wrap_tool(ToolSpec("probe", lambda app: probe), probe, _App())
    context = object()  # what the SDK fills the parameter with (no session: the pool's own bound applies)
    assert anyio.run(lambda: tool(x=7, memtree_request_context=context)) == "7"
    assert seen == [context]  # handed through, not dropped after the thread-pool share was chosen
    param = tool.__signature__.parameters["memtree_request_context"]  # type: ignore[attr-defined]
    assert param.annotation == Context | None  # the SDK's mark for "fill this, keep it out of the schema"
    assert first_time(None, "anything") and first_time(None, "anything")  # no session: always said
