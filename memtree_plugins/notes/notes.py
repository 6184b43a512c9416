"""Storing a note: checked, redacted, stored live, linked to what it is about."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

from pydantic import BaseModel, Field

if TYPE_CHECKING:
    from memtree_core.context import Context

KINDS = ("note", "observation")
MAX_CHARS = 20_000  # a note is a few lines; a longer text is an output, which read/bash keep
MAX_ABOUT = 64


class NoteResult(BaseModel):
    """What was stored: the note's id, the nodes it is linked to, and what was left out."""

    id: str
    kind: str
    about: list[str] = Field(default_factory=list, description="the nodes it is linked to (references edges)")
    missing: list[str] = Field(default_factory=list, description="ids in about that the store does not hold")
    redacted: int = Field(0, description="values redaction took out of the text before it was stored")
    tokens: int | None = None

    def render(self) -> str:
        parts = [f"stored {self.kind} {self.id}"]
        if self.about:
            parts.append(f"about {', '.join(self.about)}")
        if self.missing:
            parts.append(f"not found (not linked): {', '.join(self.missing)}")
        if self.redacted:
            parts.append(f"{self.redacted} secret value(s) redacted")
        return "; ".join(parts)


def add_note(app: Context, text: str, *, about: list[str], kind: str = "note") -> NoteResult:
    """Store ``text`` as a live ``kind`` node linked to ``about``.  Raises ValueError, naming the fix, for a
    note that cannot be stored (empty, too long, an unknown kind); redaction failing stores nothing."""
    if kind not in KINDS:
        raise ValueError(f"note: kind must be one of {', '.join(KINDS)}, not {kind!r}")
    body = text.strip()
    if not body:
        raise ValueError("note: text is empty; give what to remember")
    if len(body) > MAX_CHARS:
        raise ValueError(f"note: text is {len(body):,} characters, more than {MAX_CHARS:,}; keep a note to what "
                         f"matters and link the long output it is about (about=[id])")
    ids = list(dict.fromkeys(i.strip() for i in about if i and i.strip()))
    if len(ids) > MAX_ABOUT:
        raise ValueError(f"note: about names {len(ids)} nodes, more than {MAX_ABOUT}; link the few it is about")
    clean, hits = app.redact(body)  # raises when redaction is unavailable: then nothing is stored
    store = app.store
    with store.tx():
        found = store.get_nodes(ids)
        linked = [i for i in ids if i in found]
        row = store.insert_node(kind, clean, status_="live", metadata={"about": linked, "by": "agent"})
        for target in linked:
            store.add_edge(row.id, target, "references")
    app.record_redactions(hits)
    return NoteResult(id=row.id, kind=kind, about=linked, missing=[i for i in ids if i not in found],
                      redacted=sum(hits.values()), tokens=row.tokens)


def note_tool(app: Context):
    """The MCP ``note`` tool's function (its signature is the tool's input schema)."""

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
