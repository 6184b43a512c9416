"""TypeScript and Go code references through a real MCP session: the files read with the ``read`` tool
(the caller first, so its names resolve only once the barrel and the definitions are stored), then
``neighbors`` out and in, as an agent calls them."""

from __future__ import annotations

from pathlib import Path

from helpers.daemon import mcp_session, open_store, run_async, text_of

FILES = {
    "src/core/finalize.ts": ('import {isDraft, die} from "../internal"\n\n'
                             "export function finalize(value: any): any {\n  if (!isDraft(value)) die(3)\n"
                             "  return value\n}\n"),
    "src/internal.ts": 'export * from "./utils/common"\nexport {die} from "./utils/errors"\n',
    "src/utils/common.ts": "export function isDraft(value: any): boolean {\n  return !!value\n}\n",
    "src/utils/errors.ts": "export function die(code: number): never {\n  throw new Error(String(code))\n}\n",
    "src/utils/other.ts": "export function isDraft(): boolean {\n  return false\n}\n",
    "ws/route.go": ("package ws\n\ntype Route struct{ name string }\n\n"
                    "func (r *Route) Name(n string) *Route {\n\tr.name = n\n\treturn r\n}\n"),
    "ws/router.go": ("package ws\n\ntype Router struct{ cur *Route }\n\n"
                     "func (r *Router) Name(n string) *Route {\n\treturn r.cur.Name(n)\n}\n"),
}


def test_read_typescript_and_go_files_then_callees_and_callers_through_mcp(
        home: Path, project: Path, env: dict[str, str], daemon_guard: list[int]) -> None:
    for rel, text in FILES.items():
        (project / rel).parent.mkdir(parents=True, exist_ok=True)
        (project / rel).write_text(text)

    async def main() -> None:
        async with mcp_session(project, env) as s:
            for rel in FILES:
                got = await s.call_tool("read", {"path": str(project / rel)})
                assert not got.is_error, text_of(got)
            db = open_store(project)
            ids = {(Path(p).relative_to(project).as_posix(), sym): i for p, sym, i in db.execute(
                "SELECT json_extract(metadata, '$.path'), json_extract(metadata, '$.symbol'), id FROM nodes "
                "WHERE kind = 'file_chunk' AND status = 'live'").fetchall()}
            db.close()

            async def calls(node: str, direction: str) -> set[str]:
                got = await s.call_tool("neighbors", {"node_id": node, "direction": direction,
                                                      "edge_kinds": ["references"]})
                assert not got.is_error, text_of(got)
                return {n["id"] for n in got.structured_content["neighbors"] if "calls" in n["rels"]}

            finalize = ids[("src/core/finalize.ts", "finalize")]
            assert await calls(finalize, "out") == {ids[("src/utils/common.ts", "isDraft")],
                                                    ids[("src/utils/errors.ts", "die")]}
            assert await calls(ids[("src/utils/common.ts", "isDraft")], "in") == {finalize}
            assert await calls(ids[("src/utils/other.ts", "isDraft")], "in") == set()
            router_name = ids[("ws/router.go", "Router.Name")]
            assert await calls(router_name, "out") == {ids[("ws/route.go", "Route.Name")]}
            assert await calls(ids[("ws/route.go", "Route.Name")], "in") == {router_name}

    run_async(main)
