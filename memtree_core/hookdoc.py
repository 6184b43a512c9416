"""Print the hookspec reference in Markdown, from the hookspecs' own signatures and docstrings.

``python -m memtree_core.hookdoc`` writes what README.md's "Hook reference" section holds; a test checks
the two agree, so the docs cannot drift from the code.
"""

from __future__ import annotations

import inspect

from memtree_core import hookspecs


def hook_names() -> list[str]:
    return [n for n, f in vars(hookspecs).items() if n.startswith("memtree_") and inspect.isfunction(f)]


def render() -> str:
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
    return "\n".join(out).replace("\n\n", "\n  \n") + "\n"


if __name__ == "__main__":
    print(render(), end="")
