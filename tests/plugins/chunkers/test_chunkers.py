"""Chunkers: tiling without gaps or overlaps, Python symbols and methods, Markdown headings and fences,
the syntax-error fallback, outlines, and how a chunker is picked."""

from __future__ import annotations

import random
import textwrap
from pathlib import Path

import pytest
from helpers.chunks import assert_tiles

from memtree_core.hookspecs import hookimpl
from memtree_plugins.chunkers.markdown import MarkdownChunker
from memtree_plugins.chunkers.python import PythonChunker
from memtree_plugins.lib.lines import split_lines
from memtree_plugins.lib.window import WindowChunker

REPO = Path(__file__).resolve().parents[3]


def by_symbol(chunks):
    return {c.symbol: c for c in chunks if c.symbol and c.kind != "class_body"}


@pytest.mark.parametrize("n_lines", [1, 2, 199, 200, 201, 399, 400, 401, 1234])
@pytest.mark.parametrize("trailing_newline", [True, False])
def test_windows_tile_with_no_gaps_or_overlaps(n_lines: int, trailing_newline: bool) -> None:
    rng = random.Random(n_lines)
    text = "\n".join("x" * rng.randint(0, 30) for _ in range(n_lines)) + ("\n" if trailing_newline else "")
    chunks = WindowChunker().chunk("data.txt", text)
    assert_tiles(chunks, text)
    assert all(c.end_line - c.start_line + 1 <= 200 for c in chunks)
    assert len(chunks) == -(-n_lines // 200)
    assert {c.kind for c in chunks} == {"window"}


def test_empty_text_gives_no_chunks() -> None:
    for chunker in (WindowChunker(), PythonChunker(), MarkdownChunker()):
        assert chunker.chunk("x", "") == []


def test_line_split_counts_like_editors() -> None:
    # Form feeds and U+2028 are not line breaks for editors and grep; str.splitlines says they are.
    text = "a\x0cb\nc\u2028d\r\ne"
    assert split_lines(text) == ["a\x0cb\n", "c\u2028d\r\n", "e"]


PY = textwrap.dedent('''\
    #!/usr/bin/env python
    """Module docstring first line.

    More text.
    """

    import os
    from pathlib import Path

    LIMIT = 10


    # Comment that belongs to helper.
    @decorator(1)
    def helper(a: int, b: str = "x") -> bool:
        """Say whether a helper helps."""
        return True


    class Small(Base):
        """A small class."""

        def one(self):
            return 1


    async def fetch(url):
        return url


    if __name__ == "__main__":
        helper(1)
    ''')


def test_python_top_level_symbols_and_header() -> None:
    chunks = PythonChunker().chunk("m.py", PY)
    assert_tiles(chunks, PY)
    kinds = [(c.kind, c.symbol) for c in chunks]
    assert kinds == [("module_header", None), ("function", "helper"), ("class", "Small"),
                     ("function", "fetch"), ("statements", None)]
    header, helper, small, fetch, main = chunks
    assert (header.start_line, header.end_line) == (1, 12)
    assert "import os" in header.text and "LIMIT = 10" in header.text
    assert "Module docstring first line." in header.outline
    assert "imports: os, pathlib" in header.outline and "LIMIT" in header.outline
    # The comment block above and the decorator belong to the function.
    assert helper.start_line == 13 and helper.text.startswith("# Comment that belongs to helper.")
    assert "@decorator(1)" in helper.outline
    assert "def helper(a: int, b: str='x') -> bool:" in helper.outline
    assert "Say whether a helper helps." in helper.outline
    assert "class Small(Base):" in small.outline and "def one(self):" in small.outline
    assert "async def fetch(url):" in fetch.outline
    assert main.text.startswith('if __name__ == "__main__":')


def _big_class(n_methods: int, body_lines: int) -> str:
    methods = []
    for i in range(n_methods):
        body = "\n".join(f"        x{j} = {j}" for j in range(body_lines))
        methods.append(f"    @property\n    def m{i}(self, a=1):\n        \"\"\"Method {i}.\"\"\"\n{body}\n"
                       f"        return a\n")
    return ("import sys\n\n\nclass Big:\n    \"\"\"A big class.\"\"\"\n\n    ATTR = 1\n\n"
            + "\n".join(methods) + "\n    LATE = 2\n\n    class Inner:\n        pass\n\n\ndef after():\n    pass\n")


def test_python_big_class_splits_into_header_and_methods() -> None:
    text = _big_class(6, 15)
    chunks = PythonChunker().chunk("big.py", text)
    assert_tiles(chunks, text)
    syms = by_symbol(chunks)
    header = syms["Big"]
    assert header.kind == "class"
    assert "ATTR = 1" in header.text and "def m0" not in header.text
    assert "A big class." in header.outline and "def m5(self, a=1):" in header.outline
    for i in range(6):
        m = syms[f"Big.m{i}"]
        assert m.kind == "method"
        assert m.text.lstrip().startswith("@property")  # decorator stays with its method
        assert f"Method {i}." in m.outline and "class Big:" in m.outline
    assert syms["Big.Inner"].kind == "class"
    assert any(c.kind == "class_body" and "LATE = 2" in c.text for c in chunks)
    assert syms["after"].kind == "function"


def test_python_small_class_stays_whole() -> None:
    text = _big_class(2, 3)  # well under 80 lines
    chunks = PythonChunker().chunk("small.py", text)
    assert_tiles(chunks, text)
    assert [c.symbol for c in chunks if c.symbol] == ["Big", "after"]


def test_python_syntax_error_falls_back_to_windows() -> None:
    text = "def broken(:\n" + "x = 1\n" * 450
    chunks = PythonChunker().chunk("broken.py", text)
    assert_tiles(chunks, text)
    assert {c.kind for c in chunks} == {"window"}
    assert [(c.start_line, c.end_line) for c in chunks] == [(1, 200), (201, 400), (401, 451)]
    assert chunks[0].outline.startswith("def broken(:")


def test_python_chunker_tiles_this_repository() -> None:
    files = sorted((REPO / "memtree_core").rglob("*.py")) + sorted((REPO / "memtree_plugins").rglob("*.py"))
    assert len(files) > 10
    for f in files:
        text = f.read_text(encoding="utf-8")
        chunks = PythonChunker().chunk(str(f), text)
        assert_tiles(chunks, text)
        assert all(c.outline.strip() for c in chunks if c.text.strip()), f


MD = textwrap.dedent('''\
    Intro paragraph before any heading.

    # Title

    Some text under the title.

    ## Install

    ```sh
    # this is a shell comment, not a heading
    pip install thing
    ```

    ~~~~
    ## nor is this
    ```
    still inside the tilde fence
    ~~~~

    ### From source

    Build it.

    Usage
    -----

    Run it.
    ''')


def test_markdown_sections_and_fences() -> None:
    chunker = MarkdownChunker(section_lines=5)  # small, so every section is its own chunk
    chunks = chunker.chunk("README.md", MD)
    assert_tiles(chunks, MD)
    assert [(c.kind, c.symbol) for c in chunks] == [
        ("preamble", None), ("section", "Title"), ("section", "Title > Install"),
        ("section", "Title > Install > From source"), ("section", "Title > Usage")]
    install = chunks[2]
    assert "# this is a shell comment" in install.text and "## nor is this" in install.text
    assert install.outline.splitlines()[0] == "## Install"
    assert chunks[4].outline.splitlines()[0] == "## Usage"  # setext heading
    assert chunks[0].outline == "Intro paragraph before any heading."


def test_markdown_small_document_keeps_nested_sections_together() -> None:
    chunks = MarkdownChunker().chunk("README.md", MD)
    assert_tiles(chunks, MD)
    assert [c.symbol for c in chunks] == [None, "Title"]
    outline = chunks[1].outline.splitlines()
    assert outline[0] == "# Title" and "## Install" in outline and "### From source" in outline


def test_markdown_long_section_is_cut_outside_fences() -> None:
    fence = "```\n" + "# code\n\n" * 50 + "```\n"  # shorter than a window, so never cut
    text = "# Big\n\n" + ("word\n\n" * 150) + fence + ("more\n\n" * 150)
    chunks = MarkdownChunker().chunk("big.md", text)
    assert_tiles(chunks, text)
    assert len(chunks) > 2
    lines = split_lines(text)
    in_fence = set(range(lines.index("```\n") + 1, len(lines) - lines[::-1].index("```\n") + 1))
    for c in chunks[:-1]:
        assert c.end_line not in in_fence or c.end_line == max(in_fence), (c.start_line, c.end_line)
    assert all(c.symbol == "Big" for c in chunks)


def test_markdown_repo_docs_tile() -> None:
    docs = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
    for f in [*docs, REPO / "examples" / "bookshop" / "docs" / "architecture.md"]:
        if f.exists():
            text = f.read_text(encoding="utf-8")
            assert_tiles(MarkdownChunker().chunk(str(f), text), text)


def test_chunker_for_picks_by_priority(app) -> None:
    assert app.chunker_for("a/b.py").name == "python"
    assert app.chunker_for("README.MD").name == "markdown"
    assert app.chunker_for("main.rs").name == "treesitter"
    assert app.chunker_for("build.gradle.kts").name == "window"
    assert app.chunker_for("Makefile").name == "window"


class _TomlChunker:
    name = "toml-test"
    priority = 50

    def matches(self, path: str) -> bool:
        return path.endswith((".toml", ".py"))

    def chunk(self, path, text):
        return WindowChunker(size=3).chunk(path, text)


class _Plugin:
    @hookimpl
    def memtree_register_chunkers(self, register) -> None:
        register(_TomlChunker())


def test_plugin_chunker_wins_where_it_has_the_higher_priority(home, project) -> None:
    from memtree_core.app import App

    app = App.open(project, extra=[("toml-test", _Plugin())])
    try:
        assert app.chunker_for("pyproject.toml").name == "toml-test"
        assert app.chunker_for("x.py").name == "python"  # 100 beats 50
    finally:
        app.close()
