"""Checks on chunker output."""

from __future__ import annotations

from memtree_plugins.lib.lines import split_lines


def assert_tiles(chunks, text: str) -> None:
    """Chunks cover every line once, in order, and their texts rebuild the file exactly."""
    n = len(split_lines(text))
    expect = 1
    for c in chunks:
        assert c.start_line == expect, (c.start_line, expect, c.kind, c.symbol)
        assert c.end_line >= c.start_line
        expect = c.end_line + 1
    assert expect == n + 1
    assert "".join(c.text for c in chunks) == text
