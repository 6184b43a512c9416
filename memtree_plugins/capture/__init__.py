"""Built-in capture: the pipeline from a hook payload to redacted captures (:mod:`.pipeline`), the adapters
for Claude Code's Read, Grep and Bash payloads (:mod:`.payloads`), storing the captures once per tool call
(:mod:`.storing`), the program the hooks run to reach the daemon (:mod:`memtree_plugins.lib.hook_sender`), and
``memtree setup claude-code``, which wires an install's server and hooks into Claude Code (:mod:`.setup`).

Each tool's adapter is registered under the tool's name in lower case (``read``, ``grep``, ``bash``), so a
plugin can ``register(adapter, replaces=True)`` one of them or add an adapter for another tool (WebFetch,
Glob, Task...).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from memtree_core.hookspecs import hookimpl

if TYPE_CHECKING:
    from memtree_core.command import Command
    from memtree_core.context import Context
    from memtree_core.registry import Register
    from memtree_core.store.migrations import Migrations
    from memtree_core.types import CaptureAdapter, PreparedCapture


@hookimpl(trylast=True)
def memtree_register_capture_adapters(register: Register[CaptureAdapter]) -> None:
    from memtree_plugins.capture.payloads import TOOLS, ToolAdapter

    for tool in TOOLS:
        register(ToolAdapter(tool))


@hookimpl(trylast=True)
def memtree_prepare_capture(app: Context, payload: dict[str, Any]) -> PreparedCapture:
    from memtree_plugins.capture.pipeline import prepare

    return prepare(app, payload)


@hookimpl(trylast=True)
def memtree_store_capture(app: Context, payload: dict[str, Any], prepared: PreparedCapture,
                          replayed: bool) -> list[str]:
    from memtree_plugins.capture.storing import store_captures

    return store_captures(app, payload, prepared, replayed)


@hookimpl(trylast=True)
def memtree_store_migrations(register: Register[Migrations]) -> None:
    from memtree_plugins.capture.keys import migrations

    register(migrations())


@hookimpl(trylast=True)
def memtree_daemon_started(app: Context) -> None:
    from memtree_plugins.lib.hook_sender import write_sender_file

    write_sender_file(app.paths.home, app.environ)


@hookimpl(trylast=True)
def memtree_register_commands(register: Register[Command]) -> None:
    from memtree_core.command import Command

    # The hooks this plugin's captures come through, and the server, written into Claude Code's settings.
    register(Command("setup", "wire memtree's MCP server and capture hooks into Claude Code",
                     "memtree_plugins.capture.setup"))
