"""The wrapped tools of spec §4 — ``read``, ``grep``, ``bash`` — and ``get``, as MCP tool plugins.

Each tool module has ``build(app)`` returning the plain function the daemon serves (its signature is the
input schema, its docstring the description, its pydantic result with ``render()`` the output).  The
modules are imported only when a tool is built, so loading the plugin set stays cheap.  The shared
budget cutter lives in :mod:`memtree_plugins.wrappers.budget`.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal

from memtree_core.hookspecs import hookimpl
from memtree_core.plugin_settings import PluginSettings
from memtree_core.types import ToolSpec

if TYPE_CHECKING:
    from memtree_core.context import Context
    from memtree_core.registry import Register


class WrapperSettings(PluginSettings):
    """``plugins.config.wrappers`` (user-only: nothing here is repo-safe)."""

    # Which engine grep runs: ripgrep when it is installed ("auto"), always ripgrep ("rg"), or the Python
    # fallback ("python").  MEMTREE_GREP_ENGINE, when set, still wins (scripts and benchmarks use it).
    grep_engine: Literal["auto", "rg", "ripgrep", "python"] = "auto"


@hookimpl(trylast=True)
def memtree_settings_model() -> type[PluginSettings]:
    return WrapperSettings


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
