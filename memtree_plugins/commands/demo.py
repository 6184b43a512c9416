"""``memtree demo``: drive the real server through an MCP client session and show what memtree keeps out
of the context window, on tasks, every call counted.

It indexes a project (by default a copy of the bundled sample project, in a scratch ``MEMTREE_HOME`` so
nothing of yours is touched), starts ``memtree serve`` and talks to it over stdio as an agent would: the
wrapped ``read``, ``grep`` and ``bash`` once each, then questions a developer asks of the project ("where is
NAME defined, and where is it used?"), answered with ``search``, ``compose`` and ``get``, against grep plus
reading the files a developer would open (:mod:`._demo_tasks`).  Every figure is what entered the window,
counted with the token counter memtree enforces budgets with; both totals are printed.
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
    """What each call put in the window (the whole answer, as the agent reads it)."""

    def __init__(self, count: Any, width: int) -> None:
        self.count = count
        self.width = width

    def show(self, title: str, result: Any, note: str = "") -> int:
        shown = _text(result)
        window = self.count(shown)
        status = "error: " if result.is_error else ""
        print(f"\n{fit('$ ' + title, self.width)}\n{status}{_excerpt(shown, self.width)}")
        print(wrap(f"-> {window:,} tokens entered the window{note}", self.width, "  "))
        return window


# Files searched for the tasks' names; the biggest first, as an agent is most tempted to read those whole.
TASK_FILES = 400
SKIPPED_DIRS = {"node_modules", "__pycache__"}


def project_files(project: Path) -> list[Path]:
    """The project's own files, biggest first (what an agent would be most tempted to read whole); hidden
    directories (.git, .venv, ...) and installed dependencies are not the project's."""
    files = []
    for top, dirs, names in os.walk(project):
        dirs[:] = [d for d in dirs if not d.startswith(".") and d not in SKIPPED_DIRS]  # not walked at all
        files += [p for p in (Path(top, n) for n in names) if p.is_file()]
    return sorted(files, key=lambda p: (-p.stat().st_size, str(p)))


async def _tour(s: Any, project: Path, files: list[Path], ledger: Ledger) -> None:
    """The wrapped tools once each: a budgeted slice in the window, the whole output in the store."""
    biggest = next((p for p in files if p.suffix == ".py"), files[0])
    rel = str(biggest.relative_to(project))
    res = await s.call_tool("read", {"path": rel, "budget_tokens": 600})
    ledger.show(f"read {rel} (budget 600)", res, f"; the whole file is {ledger.count(biggest.read_text(errors='replace')):,}")
    res = await s.call_tool("grep", {"pattern": "def |function |fn |func ", "max_hits": 200, "budget_tokens": 500})
    ledger.show("grep 'def |function |fn |func ' (budget 500)", res,
                f"; the whole output, {await _raw(s, res.structured_content, ledger.count):,}, is a node get pages")
    command = "find . -type f | sort | xargs wc -l"
    res = await s.call_tool("bash", {"command": command, "budget_tokens": 300})
    ledger.show(f"bash '{command}' (budget 300)", res,
                f"; the whole output, {await _raw(s, res.structured_content, ledger.count):,}, is a node get pages")


async def _task(s: Any, task: Any, ledger: Ledger) -> Any:
    """Answer one question with memtree as an agent would, every call counted."""
    from memtree_plugins.commands._demo_tasks import Answer, answered

    out = Answer()
    res = await s.call_tool("search", {"query": task.name, "limit": 5})
    out.calls.append((f"search {task.name}", ledger.show(f"search '{task.name}'", res)))
    seen = _text(res)
    hits = [h["id"] for h in (res.structured_content or {}).get("hits", [])]
    if hits:
        res = await s.call_tool("compose", {"node_ids": hits[:2], "budget_tokens": 800, "query": task.name})
        out.calls.append(("compose top 2 hits", ledger.show("compose top 2 hits (budget 800)", res)))
        seen += _text(res)
        if not answered(task, seen):
            res = await s.call_tool("get", {"node_id": hits[0], "budget_tokens": 1000})
            out.calls.append(("get top hit", ledger.show("get top hit (budget 1000)", res)))
            seen += _text(res)
    out.answered = answered(task, seen)
    return out


def _report(rows: list[tuple[Any, Any, Any]], width: int) -> None:
    """One row per task, both ways, then the totals: every call counted on both sides."""
    name = max(10, min(40, width - 30))
    print("\n" + "-" * min(width, name + 30))
    print(f"{'question':<{name}}{'memtree':>15}{'grep + read':>15}")
    for task, mine, theirs in rows:
        flag = "" if mine.answered else " (not found)"
        print(f"{fit(task.name + flag, name - 1):<{name}}{f'{mine.tokens:,} in {len(mine.calls)}':>15}"
              f"{f'{theirs.tokens:,} in {len(theirs.calls)}':>15}")
    mine_total = sum(r[1].tokens for r in rows)
    theirs_total = sum(r[2].tokens for r in rows)
    found = sum(r[1].answered for r in rows)
    print(f"{'total':<{name}}{mine_total:>15,}{theirs_total:>15,}")
    print(wrap(f"memtree: {mine_total:,} tokens; grep + read: {theirs_total:,} tokens "
               f"({100 * (1 - mine_total / theirs_total) if theirs_total else 0:.0f}% fewer with memtree); "
               f"{found} of {len(rows)} questions answered with the definition in sight; every call counted",
               width))


async def _drive(project: Path, files: list[Path], env: dict[str, str], width: int) -> None:
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    from memtree_core.app import App
    from memtree_plugins.commands._demo_tasks import baseline, pick_tasks, texts_of

    # The project's own token counter (whichever plugin provides it), the one the server's figures use.
    app = App.open(project, env)
    estimate = app.count_tokens
    app.close()  # the store was never opened; the counter needs none
    ledger = Ledger(estimate, width)
    texts = texts_of(files[:TASK_FILES], project)
    tasks = pick_tasks(texts)
    params = StdioServerParameters(command=MEMTREE, args=["serve", "--project", str(project)], env=env,
                                   cwd=str(project))
    with open(os.devnull, "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as s:
            info = await s.initialize()
            tools = [t.name for t in (await s.list_tools()).tools]
            print(wrap(f"connected to {info.server_info.name} {info.server_info.version}: tools "
                       f"{', '.join(tools)}", width))
            await _tour(s, project, files, ledger)
            rows = []
            for task in tasks:
                print(wrap(f"\n== question: {task.question}", width))
                rows.append((task, await _task(s, task, ledger), baseline(task, texts, estimate)))
            if rows:
                _report(rows, width)
            else:
                print(wrap("\nno name is defined in one file and used in another: no question to answer", width))


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
            # Indexed up front, as `memtree index` would on a user's repository: no agent's window pays for it.
            indexed = subprocess.run([MEMTREE, "index", "--project", str(project), "--no-progress", "--json"],
                                     env=env, capture_output=True, text=True, timeout=600)
            if indexed.returncode != 0:
                raise RuntimeError(f"memtree index exited {indexed.returncode}: {indexed.stderr.strip()[-300:]}")
            anyio.run(_drive, project, files, env, width)
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
