"""``memtree demo``: drive the real server through an MCP client session and show what memtree keeps out
of the context window.

It starts ``memtree serve`` for a project (by default a copy of the bundled sample project, in a scratch
``MEMTREE_HOME`` so nothing of yours is touched), calls ``read``, ``grep``, ``bash``, ``search`` and
``compose`` over stdio as an agent would, and prints for each call what entered the window against what the
raw output would have cost, counted with the same token counter memtree enforces budgets with.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

SAMPLE = Path(__file__).resolve().parents[2] / "eval" / "fixture_repo"
MEMTREE = str(Path(sys.executable).parent / "memtree")


def add_arguments(parser: Any) -> None:
    parser.add_argument("--keep", action="store_true",
                        help="keep the scratch copy and store (their paths are printed) instead of deleting them")
    parser.add_argument("--width", type=int, default=100, help="how wide to print excerpts")


def _excerpt(text: str, width: int, lines: int = 6) -> str:
    rows = text.splitlines()
    out = [("    " + r)[:width] for r in rows[:lines]]
    if len(rows) > lines:
        out.append(f"    … {len(rows) - lines} more lines")
    return "\n".join(out)


def _text(result: Any) -> str:
    return "\n".join(getattr(c, "text", "") for c in result.content)


class Ledger:
    """Tokens that entered the window against what the raw output would have cost."""

    def __init__(self, count: Any, width: int) -> None:
        self.count = count
        self.width = width
        self.rows: list[tuple[str, int, int]] = []

    def show(self, title: str, result: Any, raw_tokens: int) -> None:
        shown = _text(result)
        window = self.count(shown)
        self.rows.append((title, window, raw_tokens))
        status = "error: " if result.is_error else ""
        print(f"\n$ {title}\n{status}{_excerpt(shown, self.width)}")
        print(f"  -> {window:,} tokens entered the window; the raw output would have cost {raw_tokens:,}")

    def total(self) -> None:
        window = sum(r[1] for r in self.rows)
        raw = sum(r[2] for r in self.rows)
        print("\n" + "-" * min(self.width, 72))
        print(f"{'call':<44}{'window':>10}{'raw':>10}")
        for title, w, r in self.rows:
            print(f"{title[:43]:<44}{w:>10,}{r:>10,}")
        saved = 100 * (1 - window / raw) if raw else 0.0
        print(f"{'total':<44}{window:>10,}{raw:>10,}   {saved:.0f}% kept out of the window")


async def _drive(project: Path, env: dict[str, str], width: int) -> None:
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    from memtree_plugins.tokens import estimate

    ledger = Ledger(estimate, width)
    params = StdioServerParameters(command=MEMTREE, args=["serve", "--project", str(project)], env=env,
                                   cwd=str(project))
    with open(os.devnull, "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as s:
            info = await s.initialize()
            tools = [t.name for t in (await s.list_tools()).tools]
            print(f"connected to {info.server_info.name} {info.server_info.version}: tools {', '.join(tools)}")

            files = sorted((p for p in project.rglob("*") if p.is_file() and ".git" not in p.parts),
                           key=lambda p: p.stat().st_size, reverse=True)
            biggest = next((p for p in files if p.suffix == ".py"), files[0])
            rel = str(biggest.relative_to(project))
            res = await s.call_tool("read", {"path": rel, "budget_tokens": 600})
            ledger.show(f"read {rel} (budget 600)", res, estimate(biggest.read_text(errors="replace")))

            # Index the rest quietly, as an agent's reads over a session would.
            for p in files[:40]:
                await s.call_tool("read", {"path": str(p.relative_to(project)), "budget_tokens": 200})

            res = await s.call_tool("grep", {"pattern": "def |function |fn |func ", "max_hits": 200,
                                             "budget_tokens": 500})
            ledger.show("grep 'def |function |fn |func ' (budget 500)", res,
                        await _raw(s, res.structured_content, estimate))

            command = "find . -type f | sort | xargs wc -l"
            res = await s.call_tool("bash", {"command": command, "budget_tokens": 300})
            ledger.show(f"bash '{command}' (budget 300)", res, await _raw(s, res.structured_content, estimate))

            res = await s.call_tool("search", {"query": "payment retries backoff jitter", "limit": 5})
            hits = (res.structured_content or {}).get("hits", [])
            ledger.show("search 'payment retries backoff jitter'", res,
                        sum(h.get("tokens", 0) for h in hits))

            seeds = [h["id"] for h in hits[:3]]
            if seeds:
                res = await s.call_tool("compose", {"node_ids": seeds, "budget_tokens": 1200})
                manifest = (res.structured_content or {}).get("manifest", {})
                raw = sum(e.get("tokens", 0) for part in ("included", "substituted", "dropped")
                          for e in manifest.get(part, []))
                ledger.show("compose top 3 hits (budget 1200)", res, raw)
                print(f"  manifest: {len(manifest.get('included', []))} included, "
                      f"{len(manifest.get('substituted', []))} as summary/outline, "
                      f"{manifest.get('dropped_total', 0)} dropped; used {manifest.get('used')} of "
                      f"{manifest.get('budget')}")
            ledger.total()


async def _raw(s: Any, structured: dict[str, Any] | None, estimate: Any) -> int:
    """The full stored output of a grep or bash call, paged back with get: what a native tool returns."""
    node_id = (structured or {}).get("node_id")
    if not node_id:
        return 0
    parts, offset = [], 0
    while offset is not None:
        page = await s.call_tool("get", {"node_id": node_id, "offset": offset, "budget_tokens": 50_000})
        data = page.structured_content or {}
        parts.append(data.get("content", ""))
        offset = data.get("next_offset")
    text = "".join(parts)
    tokens = estimate(text)
    original, stored = data.get("original_bytes", 0), len(text.encode())
    return tokens * original // stored if data.get("truncated") and stored else tokens


def run(args: Any) -> int:
    import anyio

    scratch = Path(tempfile.mkdtemp(prefix="memtree-demo-"))
    env = {k: v for k, v in os.environ.items()}
    if args.project:
        project = Path(args.project).resolve()
        print(f"memtree demo on {project} (store under {env.get('MEMTREE_HOME', '~/.memtree')})")
    elif SAMPLE.is_dir():
        project = scratch / "bookshop"
        shutil.copytree(SAMPLE, project)
        env["MEMTREE_HOME"] = str(scratch / "home")
        print(f"memtree demo on a copy of the sample project at {project}\n(scratch store in {scratch / 'home'})")
    else:
        project = Path.cwd()
        print(f"memtree demo on the current directory {project}")
    try:
        anyio.run(_drive, project, env, args.width)
    finally:
        subprocess.run([MEMTREE, "stop", "--project", str(project)], env=env, capture_output=True, timeout=60)
        if args.keep or args.project:
            print(f"\nkept: {project} and its store (memtree info --project {project})")
        if not args.keep:
            shutil.rmtree(scratch, ignore_errors=True)
    return 0
