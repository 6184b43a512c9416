"""The host's size (issue 14: "memtree_core holds only host machinery ... in <= 3,000 lines"), by part.

Lines are ``wc -l``'s; code lines leave out blank lines, comments and docstrings.  Each module of
``memtree_core`` (the demo's sample project aside) belongs to one part of the host; a module no part names is
listed as such, so a new one cannot go uncounted.

    python eval/bench/core_size.py
"""

from __future__ import annotations

import ast
import io
import tokenize
from pathlib import Path

CORE = Path(__file__).resolve().parents[2] / "memtree_core"
GOAL = 3_000

# part -> the modules (paths under memtree_core/; a trailing "/" takes a whole package)
PARTS: dict[str, tuple[str, ...]] = {
    "store": ("store/",),
    "memtree serve's forwarder": ("forwarder/", "commands/serve.py"),
    "daemon": ("daemon/", "coordinator.py", "commands/daemon.py", "commands/stop.py"),
    "plugin host": ("plugins.py", "registry.py", "hookspecs.py", "types.py", "context.py", "hookdoc.py",
                    "commands/plugins.py"),
    "ingest transport and redaction gate": ("ingest.py", "replacing.py", "root_links.py", "redaction_gate.py",
                                            "redacting.py"),
    "settings": ("settings.py", "plugin_settings.py", "project_settings.py"),
    "app and CLI dispatch": ("app.py", "cli.py", "command.py", "errors.py", "__init__.py",
                             "commands/__init__.py", "commands/_common.py", "commands/doctor.py"),
}
FRAMEWORK = ("plugin host", "settings", "app and CLI dispatch")  # the parts no split of the host could move


def code_lines(source: str) -> int:
    """Lines holding a token of code: not blank, not only a comment, not part of a docstring."""
    docstrings: set[int] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) \
                    and isinstance(first.value.value, str):
                docstrings.update(range(first.lineno, (first.end_lineno or first.lineno) + 1))
    lines: set[int] = set()
    skip = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER}
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type not in skip:
            lines.update(range(tok.start[0], tok.end[0] + 1))
    return len(lines - docstrings)


def part_of(module: str) -> str | None:
    for part, names in PARTS.items():
        if any(module.startswith(n) if n.endswith("/") else module == n for n in names):
            return part
    return None


def main() -> None:
    sizes: dict[str, list[int]] = {part: [0, 0] for part in PARTS}
    unplaced = []
    for path in sorted(CORE.rglob("*.py")):
        module = path.relative_to(CORE).as_posix()
        if module.startswith("sample/"):
            continue
        source = path.read_text(encoding="utf-8")
        part = part_of(module)
        if part is None:
            unplaced.append(module)
            continue
        sizes[part][0] += len(source.splitlines())
        sizes[part][1] += code_lines(source)
    print(f"{'part of memtree_core':40s} {'lines':>7s} {'code':>7s}")
    for part, (lines, code) in sizes.items():
        print(f"{part:40s} {lines:7,d} {code:7,d}")
    total = [sum(s[i] for s in sizes.values()) for i in (0, 1)]
    framework = [sum(sizes[p][i] for p in FRAMEWORK) for i in (0, 1)]
    print(f"{'total':40s} {total[0]:7,d} {total[1]:7,d}   {total[0] / GOAL:.2f}x the goal of {GOAL:,} lines")
    print(f"{'of which the framework (' + ', '.join(FRAMEWORK) + ')':40s} {framework[0]:7,d} {framework[1]:7,d}")
    for module in unplaced:
        print(f"NOT IN ANY PART (add it to PARTS): memtree_core/{module}")


if __name__ == "__main__":
    main()
