"""Built-in ``note`` tool: what an agent decides to remember, kept as a node like any other.

``note(text, about?, kind?)`` stores a ``note`` (the agent's own words: a decision, a plan, a finding) or an
``observation`` (something it saw: a behaviour, a failing command) through the same redaction as every
capture, live at once (a deliberate note is never filtered out), linked by a ``references`` edge to each node
it is about.  ``search``, ``recent``, ``neighbors`` and ``compose`` find it as they find any node; when what it
is about changes (a chunk goes stale with its file, or is superseded or pruned) the ``note_staleness`` walker
marks the note stale too, so an old note never passes for a current one (``docs/architecture.md#notes``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

from pydantic import Field

from memtree_core.hookspecs import hookimpl
from memtree_core.types import ToolSpec
from memtree_plugins.notes.notes import NoteResult, add_note

if TYPE_CHECKING:
    from memtree_core.context import Context
    from memtree_core.registry import Register
    from memtree_core.types import Walker


def _note_tool(app: Context):
    def note(
        text: Annotated[str, Field(description="what to remember, in your own words (a decision, a finding, "
                                               "what is left to do)")],
        about: Annotated[list[str] | None, Field(description="ids of the nodes it is about (file chunks, "
                                                             "outputs, other notes); it goes stale when they "
                                                             "change")] = None,
        kind: Annotated[str, Field(description="note (your own conclusion or plan) | observation (something "
                                               "you saw happen)")] = "note",
        memtree_request_context: Any = None,
    ) -> NoteResult:
        """Keep a note in the store, redacted like everything else, linked to the nodes it is about; search,
        recent and compose find it later, in this session or the next."""
        return add_note(app, text, about=about or [], kind=kind)

    return note


@hookimpl(trylast=True)
def memtree_register_tools(register: Register[ToolSpec]) -> None:
    register(ToolSpec("note", _note_tool, title="Keep a note", idempotent=False))


@hookimpl(trylast=True)
def memtree_register_walkers(register: Register[Walker]) -> None:
    from memtree_plugins.notes.staleness import NoteStaleness

    register(NoteStaleness())
