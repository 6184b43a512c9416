"""The wrapped tools — ``read``, ``grep``, ``bash`` — and ``get``, as MCP tool plugins.

Each tool module has ``build(app)`` returning the plain function the daemon serves (its signature is the
input schema, its docstring the description, its pydantic result with ``render()`` the output).  The
modules are imported only when a tool is built, so loading the plugin set stays cheap.  The shared
budget cutter lives in :mod:`memtree_plugins.wrappers.budget`.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from memtree_core.hookspecs import hookimpl
from memtree_core.types import ToolSpec

if TYPE_CHECKING:
    from memtree_core.context import Context
    from memtree_core.registry import Register
    from memtree_plugins.wrappers.settings import WrappersSettings

log = logging.getLogger("memtree.daemon")


@hookimpl(trylast=True)
def memtree_settings_model() -> type[WrappersSettings]:
    # ``budgets`` (top-level) and ``plugins.config.wrappers``: memtree_plugins.wrappers.settings
    from memtree_plugins.wrappers.settings import WrappersSettings

    return WrappersSettings


def _lazy(module: str) -> Callable[[Context], Callable[..., Any]]:
    def build(app: Context) -> Callable[..., Any]:
        return importlib.import_module(f"memtree_plugins.wrappers.{module}").build(app)

    return build


def _grep_limits() -> dict[str, Any]:
    from memtree_plugins.wrappers import grep, grep_engines

    return {"grep_timeout_s": grep.TIMEOUT_S, "grep_max_file_bytes": grep_engines.MAX_FILE_BYTES}


def _bash_limits() -> dict[str, Any]:
    from memtree_plugins.wrappers import bash

    return {"bash_timeout_s": bash.DEFAULT_TIMEOUT_S, "bash_max_timeout_s": bash.MAX_TIMEOUT_S}


@hookimpl(trylast=True)
def memtree_register_tools(register: Register[ToolSpec]) -> None:
    # read and grep write memtree's own store but never the user's files; only get is truly read-only.
    register(ToolSpec(name="read", build=_lazy("read"), title="Read a file (stored, budgeted)",
                      idempotent=True))
    register(ToolSpec(name="grep", build=_lazy("grep"), title="Search files (stored, budgeted)",
                      idempotent=True, limits=_grep_limits))
    register(ToolSpec(name="bash", build=_lazy("bash"), title="Run a shell command (stored, budgeted)",
                      destructive=True, open_world=True, limits=_bash_limits))
    register(ToolSpec(name="get", build=_lazy("get"), title="Page through a stored node", read_only=True))


@hookimpl(trylast=True)
def memtree_daemon_stopping(app: Context) -> None:
    """End every process the bash and grep tools started (and refuse new ones): none may outlive the daemon."""
    from memtree_plugins.wrappers import children

    ended = children.end_all()
    if ended.killed:
        log.info("ended %d process(es) started by tool calls", len(ended.killed))
    if ended.survivors or ended.notes:
        log.warning("tool processes left running: %s", ended.summary())
