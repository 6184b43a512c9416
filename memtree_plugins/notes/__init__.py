"""Built-in ``note`` tool: what an agent decides to remember, kept as a node like any other.

``note(text, about?, kind?)`` stores a ``note`` (the agent's own words: a decision, a plan, a finding) or an
``observation`` (something it saw: a behaviour, a failing command) through the same redaction as every
capture, live at once (a deliberate note is never filtered out), linked by a ``references`` edge to each node
it is about.  ``search``, ``recent``, ``neighbors`` and ``compose`` find it as they find any node; when what it
is about changes (a chunk goes stale with its file, or is superseded or pruned) the ``note_staleness`` walker
marks the note stale too, so an old note never passes for a current one (``docs/architecture.md#notes``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memtree_core.command import Command
from memtree_core.hookspecs import hookimpl
from memtree_core.types import ToolSpec

if TYPE_CHECKING:  # pydantic is imported only when a tool is built: `memtree digest --help` never needs it
    from memtree_core.context import Context
    from memtree_core.plugin_settings import BuiltinSettings
    from memtree_core.registry import Register
    from memtree_core.types import Walker


def _note_tool(app: Context):
    from memtree_plugins.notes.notes import note_tool

    return note_tool(app)


@hookimpl(trylast=True)
def memtree_register_tools(register: Register[ToolSpec]) -> None:
    register(ToolSpec("note", _note_tool, title="Keep a note", idempotent=False))


@hookimpl(trylast=True)
def memtree_register_commands(register: Register[Command]) -> None:
    register(Command("digest", "the project's recent work in a few lines (what the SessionStart hook adds)",
                     "memtree_plugins.notes.digest_command"))


@hookimpl(trylast=True)
def memtree_settings_model() -> type[BuiltinSettings]:
    from memtree_plugins.notes.settings import NotesSettings

    return NotesSettings


@hookimpl(trylast=True)
def memtree_register_walkers(register: Register[Walker]) -> None:
    from memtree_plugins.notes.staleness import NoteStaleness

    register(NoteStaleness())
