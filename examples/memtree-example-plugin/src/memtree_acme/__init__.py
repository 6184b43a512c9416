"""memtree-example-plugin: what a third-party plugin looks like.

It uses only memtree's public plugin interface: the hook markers in :mod:`memtree_core.hookspecs` and the
shapes in :mod:`memtree_core.types`.  Each hook receives a ``register`` callable bound to this plugin:

* ``register(item)`` adds an item under ``item.name``; a name another plugin already registered is an
  error unless the call says ``replaces=True``;
* ``register.remove(name)`` withdraws an item (to turn off one built-in rule, say).

Nothing heavy is imported at module level: memtree imports this module on every start, including the
capture path, so each hook imports what it needs when it is called.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memtree_core.hookspecs import hookimpl

if TYPE_CHECKING:
    from memtree_core.registry import Register
    from memtree_core.types import CaptureAdapter, Chunker, Filter, RedactionRule


@hookimpl
def memtree_register_redaction_rules(register: Register[RedactionRule]) -> None:
    from memtree_acme.redaction import AcmeTokenRule

    register(AcmeTokenRule())


@hookimpl
def memtree_register_filters(register: Register[Filter]) -> None:
    from memtree_acme.filters import ListingsAndLockfiles

    register(ListingsAndLockfiles())


@hookimpl
def memtree_register_chunkers(register: Register[Chunker]) -> None:
    from memtree_acme.chunkers import SectionChunker, ShortWindowChunker

    register(SectionChunker())
    # Override a built-in: memtree's fallback chunker is registered as "window" (200-line windows).
    # Without replaces=True this registration would be reported as a conflict and skipped.
    register(ShortWindowChunker(), replaces=True)


@hookimpl
def memtree_register_capture_adapters(register: Register[CaptureAdapter]) -> None:
    from memtree_acme.webfetch import WebFetchAdapter

    # Captures WebFetch results too (memtree's own adapters take Read, Grep and Bash).
    register(WebFetchAdapter())
