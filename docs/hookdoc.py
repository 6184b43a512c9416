"""Write the hook reference (docs/hooks.md) from the hookspecs' own signatures and docstrings.

A docs tool, not part of memtree: it lives beside the docs, is not in the wheel, and nothing under
``memtree_core`` or ``memtree_plugins`` imports it.  Run it from a checkout with memtree installed:

    python docs/hookdoc.py            # print the generated section
    python docs/hookdoc.py --write    # replace the section between the markers in docs/hooks.md

Each hook is followed by its example plugin, ``examples/hooks/<hook>.py`` (a test loads every one as a
plugin).  ``tests/core/test_hookspecs_meta.py`` checks that docs/hooks.md holds exactly what this prints, so the
reference cannot drift from the code.
"""

from __future__ import annotations

import ast
import inspect
import re
import sys
from pathlib import Path

from memtree_core import hookspecs

DOCS = Path(__file__).resolve().parent
EXAMPLES = DOCS.parent / "examples" / "hooks"
HOOKS_MD = DOCS / "hooks.md"
BEGIN = "<!-- hookspecs:begin"
END = "<!-- hookspecs:end -->"


def hook_names() -> list[str]:
    return [n for n, f in vars(hookspecs).items() if n.startswith("memtree_") and inspect.isfunction(f)]


def example(name: str, examples: Path = EXAMPLES) -> str | None:
    """The example plugin module of a hook, or None when none is written."""
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
        opts = getattr(fn, "memtree_spec", {}) or {}  # pluggy keeps the hookspec options here
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


def generated_section(text: str) -> str:
    """What a document holds between its begin and end markers (the begin marker's line left out)."""
    begin = text.index(BEGIN)
    return text[text.index("\n", begin) + 1:text.index(END)]


def write(path: Path = HOOKS_MD, examples: Path = EXAMPLES) -> bool:
    """Replace the generated section of ``path``; True when it changed."""
    text = path.read_text()
    start = text.index("\n", text.index(BEGIN)) + 1
    new = text[:start] + render(examples) + text[text.index(END):]
    if new != text:
        path.write_text(new)
    return new != text


if __name__ == "__main__":
    if sys.argv[1:] == ["--write"]:
        print(f"{HOOKS_MD}: {'updated' if write() else 'already up to date'}")
    elif not sys.argv[1:]:
        print(render(), end="")
    else:
        sys.exit("usage: python docs/hookdoc.py [--write]")
