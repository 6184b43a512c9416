"""The documents stay a size a reader can hold, and what cites them finds what it cites.

Code comments cite ``docs/architecture.md#<section>``; a renamed section would leave them pointing nowhere.
"""

from __future__ import annotations

import re
import subprocess

import pytest
from helpers.common import REPO

README_MAX_LINES = 600
ARCHITECTURE = REPO / "docs" / "architecture.md"
CITATION = re.compile(r"docs/architecture\.md#([A-Za-z0-9_-]+)")
LINK = re.compile(r"\]\(([^)#\s]*)(?:#([^)\s]+))?\)")  # [text](path#anchor); (#anchor) is the same page
# What a reader of the repository cannot follow: the design notes and style guide kept outside it, a numbered
# section of the design spec, an issue number.
OUTSIDE = re.compile(r"DESIGN\.md|STYLE\.md|§\s?\d|\bspec §|\bissues? #?\d+", re.IGNORECASE)
CITING = ("memtree_core", "memtree_plugins", "plugin", "skills", "bin", "examples", "eval", "tests", "docs",
          "README.md", "tox.ini", "pyproject.toml", ".ci")
FIXTURES = ("eval/leaky", "tests/data")  # text written as input, not about the project


def anchors(markdown: str) -> set[str]:
    """The anchors a Markdown renderer gives the headings (GitHub's rule: lower case, punctuation dropped,
    spaces to hyphens)."""
    found = set()
    for line in markdown.splitlines():
        if m := re.match(r"#{1,6}\s+(.*)", line):
            title = re.sub(r"[^\w\- ]", "", m.group(1).strip().lower())
            found.add(title.replace(" ", "-"))
    return found


def test_readme_is_short_enough_to_read() -> None:
    lines = len((REPO / "README.md").read_text(encoding="utf-8").splitlines())
    assert lines <= README_MAX_LINES, (f"README.md has {lines} lines (at most {README_MAX_LINES}): move "
                                       "reference material under docs/ and link it")


def test_every_cited_architecture_section_exists() -> None:
    sections = anchors(ARCHITECTURE.read_text(encoding="utf-8"))
    assert {"parts", "rules", "process-model", "data-flow-of-a-capture", "data-flow-of-a-search"} <= sections
    missing = []
    for top in ("memtree_core", "memtree_plugins", "eval", "tests", "plugin", "bin", "docs", "examples"):
        for path in sorted((REPO / top).rglob("*")):
            if not path.is_file() or path.suffix not in ("", ".py", ".md", ".sh", ".pl") or "bookshop" in path.parts:
                continue
            try:
                text = path.read_text(encoding="utf-8")
            except (UnicodeDecodeError, OSError):
                continue
            missing += [f"{path.relative_to(REPO)}: #{a}" for a in CITATION.findall(text) if a not in sections]
    assert not missing, "cited sections that docs/architecture.md does not have:\n" + "\n".join(missing)


def test_the_docs_links_resolve() -> None:
    broken = []
    for doc in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]:
        for target, anchor in LINK.findall(doc.read_text(encoding="utf-8")):
            if "://" in target:
                continue
            path = (doc.parent / target).resolve() if target else doc
            if not path.exists():
                broken.append(f"{doc.relative_to(REPO)}: {target}")
            elif anchor and path.suffix == ".md" and anchor not in anchors(path.read_text(encoding="utf-8")):
                broken.append(f"{doc.relative_to(REPO)}: {target}#{anchor}")
    assert not broken, "links to nothing:\n" + "\n".join(broken)


def test_the_anchor_rule() -> None:
    assert anchors("# Architecture\n## Data flow of a capture\n### The plugin host\n## Looking at the store: "
                   "`memtree ui`\n") == {"architecture", "data-flow-of-a-capture", "the-plugin-host",
                                         "looking-at-the-store-memtree-ui"}


def test_nothing_cites_a_document_or_issue_outside_the_repository() -> None:
    try:
        tracked = subprocess.run(["git", "ls-files", "-z", "--", *CITING], cwd=REPO, check=True,
                                 capture_output=True).stdout.decode().split("\0")
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout")
    found = []
    for name in sorted(filter(None, tracked)):
        path = REPO / name
        if name.startswith(tuple(f + "/" for f in FIXTURES)) or not path.is_file():
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        for number, line in enumerate(text.splitlines(), 1):
            if m := OUTSIDE.search(line):
                found.append(f"{name}:{number}: {m.group(0)!r} in {line.strip()[:100]}")
    assert not found, ("cite docs/architecture.md#<section> or a module or test here, or say the reason "
                       "itself:\n" + "\n".join(found))


def test_the_store_page_documents_every_method_a_plugin_may_call() -> None:
    """docs/store.md is the store API on one page: every member of StoreAccess is on it."""
    from memtree_core.context import StoreAccess

    page = (REPO / "docs" / "store.md").read_text(encoding="utf-8")
    members = {n for n in vars(StoreAccess) if not n.startswith("_")} | set(StoreAccess.__annotations__)
    missing = sorted(n for n in members if f"`{n}" not in page)
    assert not missing, f"docs/store.md does not document: {', '.join(missing)}"
