"""The built-in filters the ``filter`` walker applies to pending captures, in this order:

* ``min_size`` — captured text below ``capture.filterMinSize`` bytes (tool outputs and file captures only;
  notes, observations and summaries are deliberate writes and are never dropped for being short);
* ``duplicate`` — exact duplicate (same content_hash) of a live node of the same kind; for files and file
  chunks also the same source_uri (identical text at another place is another fact), for tool outputs a live
  node created within the last hour.  The kept node records that it was seen again;
* ``noise`` — tool output whose every visible character is terminal noise: ANSI escapes, spinner or
  progress-bar glyphs, percentages, counters, rates and timers.  Deliberately conservative: one letter of
  real text anywhere keeps the whole capture.

A filter returns a short reason to drop or None to keep.  A filter may also define ``on_drop(node, app,
reason)``: the walker calls it inside the transaction that drops the node (the duplicate filter links the
copy to the node it duplicates there).
"""

from __future__ import annotations

from memtree_core.hookspecs import hookimpl
from memtree_core.plugin_settings import BuiltinSettings
from memtree_core.registry import Register
from memtree_core.types import Filter
from memtree_plugins.filters.duplicate import DuplicateFilter
from memtree_plugins.filters.min_size import MinSizeFilter
from memtree_plugins.filters.noise import NoiseFilter

__all__ = ["DuplicateFilter", "MinSizeFilter", "NoiseFilter"]


@hookimpl(trylast=True)
def memtree_settings_model() -> type[BuiltinSettings]:
    # ``capture.filterMinSize``: memtree_plugins.filters.settings
    from memtree_plugins.filters.settings import FiltersSettings

    return FiltersSettings


@hookimpl(trylast=True)
def memtree_register_filters(register: Register[Filter]) -> None:
    register(MinSizeFilter())
    register(DuplicateFilter())
    register(NoiseFilter())
