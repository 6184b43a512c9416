"""The budgeted line assembler the built-in selectors share; it lives in :mod:`memtree_core.lines`, the
helper the host offers every selector plugin (and uses itself to cut a file list)."""

from memtree_core.lines import (
    MAX_LINE_CHARS,
    Count,
    Pick,
    assemble,
    head_tail_picks,
    marker,
    render,
    shown,
    split,
    with_context,
)

__all__ = ["MAX_LINE_CHARS", "Count", "Pick", "assemble", "head_tail_picks", "marker", "render", "shown", "split",
           "with_context"]
