"""The ``symbols`` text of a node: the words a developer types for the definition a file chunk holds.

Keyword search ranks this column far above body text (``SYMBOL_WEIGHT``), so a query for an identifier puts
the chunk that *defines* it before the many chunks that merely use it.  The text holds the definition's
own name (twice: it outranks the parent's name, which every method of a class carries), its qualified
name, the qualified names of members that have no chunk of their own (methods of a small class), and the
names' parts split on ``_``, dots and camelCase, so ``parseFlag``, ``parse flag``,
``rates_at`` and ``Command.option`` all reach the definition.  Only definitions get one, and of a long
definition cut into parts only the part with its header: a heading, a window or a run of statements names
nothing a query could mean as an identifier.
"""

from __future__ import annotations

import re
from typing import Any

SYMBOL_WEIGHT = 12.0
WORDS_WEIGHT = 1.0  # the words of a body's identifiers count as its body text does
WORDS_SCAN_CHARS = 200_000  # identifiers are read from this much of a node's text (a bound on the write)
MAX_WORDS = 2000
DEFINITION_KINDS = frozenset({
    "function", "method", "class", "interface", "type", "struct", "enum", "union", "trait", "impl",
    "module", "namespace", "record", "macro", "constant", "variable",
})
_MAX_MEMBERS = 40
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")
_WORD = re.compile(r"[A-Za-z0-9]+")


def split_identifier(name: str) -> list[str]:
    """``getHTTPResponse_v2`` -> ``get HTTP Response v 2``; empty parts dropped."""
    out: list[str] = []
    for word in _WORD.findall(name):
        out += _CAMEL.findall(word) or [word]
    return out


def symbol_text(metadata: dict[str, Any]) -> str:
    """The ``symbols`` column for a file chunk's metadata ('' for anything that is not a definition)."""
    qual = metadata.get("symbol")
    if not qual or not isinstance(qual, str) or metadata.get("kind") not in DEFINITION_KINDS:
        return ""
    part = metadata.get("part")
    if isinstance(part, int) and part > 1:
        return ""  # a later part of a long definition: the first part, with the header, is where it is defined
    name = metadata.get("name") if isinstance(metadata.get("name"), str) else None
    name = name or re.split(r"[.:#]", qual)[-1] or qual
    parts = split_identifier(name)
    words = [name, name, qual]
    if len(parts) > 1:
        words.append(" ".join(parts))
    # Methods of a class small enough to stay one chunk: the chunk is where they are defined.
    members = metadata.get("members")
    if isinstance(members, list):
        for m in members[:_MAX_MEMBERS]:
            if isinstance(m, str) and m:
                member_parts = split_identifier(m.rsplit(".", 1)[-1])
                words.append(m + (" " + " ".join(member_parts) if len(member_parts) > 1 else ""))
    return " ".join(words)


def identifier_words(text: str | None) -> str:
    """The ``words`` column for a node's text: the parts of its camelCase and PascalCase identifiers that are
    not already words of the text, lowercased, once each, in order of first use (``if closeCode ==
    CloseNoStatusReceived`` -> ``close code no status received``).  Parts of one character or digits only
    are left out."""
    if not text:
        return ""
    text = text[:WORDS_SCAN_CHARS]
    runs = _WORD.findall(text)
    have = {w.lower() for w in runs}
    out: list[str] = []
    for run in runs:
        if run.islower() or run.isupper() or run.isdigit():
            continue  # one word as the tokenizer sees it already
        for part in _CAMEL.findall(run):
            low = part.lower()
            if len(low) > 1 and not low.isdigit() and low not in have:
                have.add(low)
                out.append(low)
                if len(out) >= MAX_WORDS:
                    return " ".join(out)
    return " ".join(out)
