"""Built-in capture adapters: Claude Code's Read, Grep and Bash hook payloads -> captures (:mod:`.payloads`).

Each tool's adapter is registered under the tool's name in lower case (``read``, ``grep``, ``bash``), so a
plugin can ``register(adapter, replaces=True)`` one of them or add an adapter for another tool (WebFetch,
Glob, Task...).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memtree_core.hookspecs import hookimpl

if TYPE_CHECKING:
    from memtree_core.registry import Register
    from memtree_core.types import CaptureAdapter


@hookimpl(trylast=True)
def memtree_register_capture_adapters(register: Register[CaptureAdapter]) -> None:
    from memtree_plugins.capture.payloads import TOOLS, ToolAdapter

    for tool in TOOLS:
        register(ToolAdapter(tool))
