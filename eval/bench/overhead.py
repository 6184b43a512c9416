"""What each tool's answer costs beyond its content: headers, ids, labels, notes, the slice's description.

    python eval/bench/overhead.py [--runs N]

Every tool is called in-process (the same functions the MCP server exposes, found in the registry) on an
indexed copy of the bundled sample project, with the arguments an agent would give.  For each answer the text
an agent reads (``render()``) is counted with the project's token counter, and so is its content: the file
lines of ``read``, the page of ``get``, the hit lines of ``grep``, the output of ``bash``, the snippets of
``search``, the packed bodies of ``compose`` (its ``## node`` headers are overhead), the previews of
``recent``.  Overhead = answer - content, in tokens, averaged over the calls; the share is overhead / answer.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "examples" / "bookshop"


def content_of(tool: str, result: Any) -> str:
    """The part of an answer that is the thing asked for, not its description."""
    if tool in ("read", "get"):
        return result.content
    if tool == "grep":
        return "\n".join(h.text for h in result.hits)
    if tool == "bash":
        return result.preview
    if tool == "search":
        return "\n".join(h.snippet for h in result.hits)
    if tool == "compose":
        return "\n".join(line for line in result.text.splitlines() if not line.startswith("## "))
    if tool == "recent":
        return "\n".join(n.preview for n in result.items)
    return ""


def calls(project: Path) -> list[tuple[str, dict[str, Any]]]:
    files = sorted(p.relative_to(project).as_posix() for p in project.rglob("*.py") if p.is_file())
    out: list[tuple[str, dict[str, Any]]] = [("read", {"path": f}) for f in files[:6]]
    out += [("grep", {"pattern": p}) for p in ("def ", "class ", "import", "return")]
    out += [("bash", {"command": c}) for c in ("ls -la", "git log --oneline | head -20", "wc -l $(git ls-files)")]
    out += [("search", {"query": q}) for q in ("Book", "inventory reservation", "order total", "isbn")]
    out += [("recent", {"limit": 10})]
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=1, help="repeat the calls (the figures are averages)")
    args = ap.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="memtree-overhead-"))
    try:
        project = scratch / "bookshop"
        shutil.copytree(SAMPLE, project)
        subprocess.run(["git", "init", "-q"], cwd=project, check=True)
        subprocess.run(["git", "-c", "user.email=b@x", "-c", "user.name=b", "add", "-A"], cwd=project, check=True)
        subprocess.run(["git", "-c", "user.email=b@x", "-c", "user.name=b", "commit", "-qm", "sample"], cwd=project,
                       check=True)
        import os

        os.environ["MEMTREE_HOME"] = str(scratch / "home")
        from memtree_core.app import App

        app = App.open(project)
        try:
            count = app.count_tokens
            tools = {name: app.plugins.tools.get(name).build(app) for name in
                     ("read", "grep", "bash", "get", "search", "recent", "compose")}
            figures: dict[str, list[tuple[int, int]]] = {}
            for _ in range(args.runs):
                last_ids: list[str] = []
                for tool, arguments in calls(project):
                    result = tools[tool](**arguments)
                    figures.setdefault(tool, []).append((count(result.render()), count(content_of(tool, result))))
                    if tool == "search":
                        last_ids = [h.id for h in result.hits[:3]] or last_ids
                    if tool == "read" and result.chunks:
                        node = result.chunks[0].id
                        page = tools["get"](node_id=node)
                        figures.setdefault("get", []).append((count(page.render()), count(page.content)))
                if last_ids:
                    result = tools["compose"](node_ids=last_ids, budget_tokens=1200)
                    figures.setdefault("compose", []).append((count(result.render()), count(content_of("compose", result))))
        finally:
            app.close()
        print(f"{'tool':<10}{'calls':>6}{'answer':>9}{'content':>9}{'overhead':>10}{'share':>8}   (tokens, mean per call)")
        for tool, rows in figures.items():
            answer = statistics.mean(a for a, _ in rows)
            content = statistics.mean(c for _, c in rows)
            over = answer - content
            print(f"{tool:<10}{len(rows):>6}{answer:>9.0f}{content:>9.0f}{over:>10.0f}{over / answer if answer else 0:>8.0%}")
        return 0
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
