"""Print the hookspec reference in Markdown, from the hookspecs' own signatures and docstrings.

``python -m memtree_core.hookdoc`` writes what README.md's "Hook reference" section holds; a test checks
the two agree, so the docs cannot drift from the code.  Each hook is followed by its example plugin,
``examples/hooks/<hook>.py`` in a source checkout (a test loads every one as a plugin).  The examples are
not in the wheel: from an installed copy, name the checkout's folder (``python -m memtree_core.hookdoc
examples/hooks``).
"""

from __future__ import annotations

import ast
import inspect
import re
from pathlib import Path

from memtree_core import hookspecs

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "hooks"


def hook_names() -> list[str]:
    return [n for n, f in vars(hookspecs).items() if n.startswith("memtree_") and inspect.isfunction(f)]


def example(name: str, examples: Path = EXAMPLES) -> str | None:
    """The example plugin module of a hook, or None (none written, or not a source checkout)."""
    path = examples / f"{name}.py"
    return path.read_text() if path.is_file() else None


def _without_docstring(code: str) -> str:
    """The example as shown: its module docstring (which only says what the file is) left out."""
    body = ast.parse(code).body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        code = "\n".join(code.splitlines()[body[0].end_lineno:])
    return code.strip("\n") + "\n"


def render(examples: Path = EXAMPLES) -> str:
    out = []
    for name in hook_names():
        fn = getattr(hookspecs, name)
        params = ", ".join(inspect.signature(fn).parameters)
        opts = getattr(fn, "memtree_spec", {}) or {}  # pluggy keeps the spec options here
        tag = " *(firstresult)*" if opts.get("firstresult") else ""
        out.append(f"- `{name}({params})`{tag}")
        doc = inspect.getdoc(fn) or ""
        for line in doc.splitlines():
            out.append(f"  {line}".rstrip() if line.strip() else "")
        code = example(name, examples)
        if code is not None:
            out += ["", f"  Example (`examples/hooks/{name}.py`):", "", "  ```python"]
            out += [f"  {line}".rstrip() for line in _without_docstring(code).splitlines()]
            out.append("  ```")
    return re.sub(r"\n(?=\n)", "\n  ", "\n".join(out)) + "\n"  # blank lines stay inside the list item


if __name__ == "__main__":
    import sys

    print(render(Path(sys.argv[1]) if len(sys.argv) > 1 else EXAMPLES), end="")
