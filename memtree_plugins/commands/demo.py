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

from memtree_plugins.commands._terminal import fit, terminal_width, wrap

MEMTREE = str(Path(sys.executable).parent / "memtree")
# The sample project: examples/bookshop, which this link reaches in a checkout and the wheel carries as data
# (pyproject.toml's package-data).
SAMPLE = (Path(__file__).parent / "demo-project").resolve()

EXAMPLE = "memtree demo    (or on your own repository: memtree demo --project .)"
PROJECT_HELP = ("run on this directory instead, with your MEMTREE_HOME store (default: a scratch copy of the "
                "bundled sample project, with a scratch store deleted afterwards)")


def add_arguments(parser: Any) -> None:
    parser.add_argument("--keep", action="store_true",
                        help="keep the scratch copy and store (their paths are printed) instead of deleting them")
    parser.add_argument("--width", type=int, default=None,
                        help="columns to print in (default: the terminal's width, else 100)")


def _excerpt(text: str, width: int, lines: int = 6) -> str:
    rows = text.splitlines()
    out = [fit("    " + r.expandtabs(4), width) for r in rows[:lines]]
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
        print(f"\n{fit('$ ' + title, self.width)}\n{status}{_excerpt(shown, self.width)}")
        print(wrap(f"-> {window:,} tokens entered the window; the raw output would have cost {raw_tokens:,}",
                   self.width, "  "))

    def total(self) -> None:
        window = sum(r[1] for r in self.rows)
        raw = sum(r[2] for r in self.rows)
        # Two number columns of 10; the call column takes what is left, up to 44.
        name = max(10, min(44, self.width - 20))
        print("\n" + "-" * min(self.width, name + 20))
        print(f"{'call':<{name}}{'window':>10}{'raw':>10}")
        for title, w, r in self.rows:
            print(f"{fit(title, name - 1):<{name}}{w:>10,}{r:>10,}")
        saved = 100 * (1 - window / raw) if raw else 0.0
        print(f"{'total':<{name}}{window:>10,}{raw:>10,}")
        print(wrap(f"{saved:.0f}% kept out of the window", self.width))


# The demo reads this many of the biggest files; its search query comes from them, so it finds what was read.
READ_FILES = 40
SKIPPED_DIRS = {"node_modules", "__pycache__"}


def project_files(project: Path) -> list[Path]:
    """The project's own files, biggest first (what an agent would be most tempted to read whole); hidden
    directories (.git, .venv, ...) and installed dependencies are not the project's."""
    files = []
    for top, dirs, names in os.walk(project):
        dirs[:] = [d for d in dirs if not d.startswith(".") and d not in SKIPPED_DIRS]  # not walked at all
        files += [p for p in (Path(top, n) for n in names) if p.is_file()]
    return sorted(files, key=lambda p: (-p.stat().st_size, str(p)))


async def _drive(project: Path, files: list[Path], query: str, env: dict[str, str], width: int) -> None:
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    from memtree_core.app import App

    # The project's own token counter (whichever plugin provides it), the one the server's figures use.
    app = App.open(project, env)
    estimate = app.count_tokens
    app.close()  # the store was never opened; the counter needs none
    ledger = Ledger(estimate, width)
    params = StdioServerParameters(command=MEMTREE, args=["serve", "--project", str(project)], env=env,
                                   cwd=str(project))
    with open(os.devnull, "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as s:
            info = await s.initialize()
            tools = [t.name for t in (await s.list_tools()).tools]
            print(wrap(f"connected to {info.server_info.name} {info.server_info.version}: tools "
                       f"{', '.join(tools)}", width))

            biggest = next((p for p in files if p.suffix == ".py"), files[0])
            rel = str(biggest.relative_to(project))
            res = await s.call_tool("read", {"path": rel, "budget_tokens": 600})
            ledger.show(f"read {rel} (budget 600)", res, estimate(biggest.read_text(errors="replace")))

            # Index the rest quietly, as an agent's reads over a session would.
            for p in files[:READ_FILES]:
                await s.call_tool("read", {"path": str(p.relative_to(project)), "budget_tokens": 200})

            res = await s.call_tool("grep", {"pattern": "def |function |fn |func ", "max_hits": 200,
                                             "budget_tokens": 500})
            ledger.show("grep 'def |function |fn |func ' (budget 500)", res,
                        await _raw(s, res.structured_content, estimate))

            command = "find . -type f | sort | xargs wc -l"
            res = await s.call_tool("bash", {"command": command, "budget_tokens": 300})
            ledger.show(f"bash '{command}' (budget 300)", res, await _raw(s, res.structured_content, estimate))

            hits: list[dict[str, Any]] = []
            if query:
                res = await s.call_tool("search", {"query": query, "limit": 5})
                hits = (res.structured_content or {}).get("hits", [])
                ledger.show(f"search '{query}' (the project's most frequent identifiers)", res,
                            sum(h.get("tokens", 0) for h in hits))

            seeds = [h["id"] for h in hits[:3]]
            if seeds:
                res = await s.call_tool("compose", {"node_ids": seeds, "budget_tokens": 1200})
                manifest = (res.structured_content or {}).get("manifest", {})
                raw = sum(e.get("tokens", 0) for part in ("included", "substituted", "dropped")
                          for e in manifest.get(part, []))
                ledger.show("compose top 3 hits (budget 1200)", res, raw)
                print(wrap(f"manifest: {len(manifest.get('included', []))} included, "
                           f"{len(manifest.get('substituted', []))} as summary/outline, "
                           f"{manifest.get('dropped_total', 0)} dropped; used {manifest.get('used')} of "
                           f"{manifest.get('budget')}", width, "  "))
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


def _check_settings(project: Path, env: dict[str, str]) -> None:
    """Fail here, in one line, on a setting the server would refuse; it would otherwise die mid-handshake."""
    from memtree_core.daemon.project import identify
    from memtree_core.forwarder.paths import memtree_home
    from memtree_core.project_settings import load_settings

    load_settings(memtree_home(env), identify(project).root, env)  # raises SettingsError


def _daemon_log(project: Path, env: dict[str, str]) -> Path:
    from memtree_core.daemon.project import identify
    from memtree_core.forwarder.paths import ProjectPaths, memtree_home

    return ProjectPaths.for_hash(memtree_home(env), identify(project).hash).log


def _first_failure(exc: BaseException) -> BaseException:
    """The innermost real error of an ExceptionGroup (what anyio wraps a failed session in)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def run(args: Any) -> int:
    import anyio

    from memtree_core.errors import UsageError
    from memtree_plugins.commands._demo_query import project_query

    width = max(20, args.width) if args.width else terminal_width()
    env = {k: v for k, v in os.environ.items()}
    scratch: Path | None = None
    started = failed = False
    if args.project:
        project = Path(args.project).resolve()
        header = f"memtree demo on {project} (store under {env.get('MEMTREE_HOME', '~/.memtree')})"
    else:
        scratch = Path(tempfile.mkdtemp(prefix="memtree-demo-"))
        project = scratch / "bookshop"
        shutil.copytree(SAMPLE, project)
        env["MEMTREE_HOME"] = str(scratch / "home")
        header = f"memtree demo on a copy of the sample project at {project} (scratch store in {scratch / 'home'})"
    try:
        _check_settings(project, env)
        files = project_files(project)
        if not files:
            raise UsageError(f"{project} has no files to show; run it on a project with some code in it")
        print(wrap(header, width))
        started = True
        try:
            anyio.run(_drive, project, files, project_query(files[:READ_FILES]), env, width)
        except Exception as exc:
            failed = True  # keep a scratch store: its daemon log is what explains the failure
            cause = _first_failure(exc)
            what = " ".join(f"{type(cause).__name__}: {cause}".split())[:300]
            raise UsageError(f"the demo session failed ({what}); the daemon's log is {_daemon_log(project, env)}"
                             ) from None
    finally:
        if started:
            subprocess.run([MEMTREE, "stop", "--project", str(project)], env=env, capture_output=True,
                           timeout=60)
            if args.project:
                print(wrap(f"\nkept: {project} and its store (memtree info --project {project})", width))
            elif args.keep:
                home = env["MEMTREE_HOME"]
                print(wrap(f"\nkept: {project} and its store in {home} (MEMTREE_HOME={home} memtree info "
                           f"--project {project})", width))
        if scratch is not None and not args.keep and not failed:
            shutil.rmtree(scratch, ignore_errors=True)
    return 0
