"""A plugin's own schema steps (hook ``memtree_store_migrations``), applied by :meth:`Store.migrate`.

A plugin that keeps tables or indexes of its own registers a :class:`Migrations` under its name: an ordered
list of steps, each a SQL statement or a function of the store.  The host applies, each time it opens a
store, the steps that store has not had yet, in order, each in its own write transaction with the count of
steps done (``meta`` key ``schema:<name>``), so a step runs once per store however many processes open it
at once.  Never edit a released step: add the next one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

# A SQL statement, or a function of the store (``StoreAccess``) that does its work through it.  A function
# that returns False has not applied yet and must have changed nothing (it needs a table that is not there:
# the vector table exists only where sqlite-vec loads): the count stays, and it runs again at the next open.
Step = str | Callable[[Any], object]

META_PREFIX = "schema:"


@dataclass(frozen=True)
class Migrations:
    """``name``'s schema steps, oldest first (``name``: its ``meta`` key is ``schema:<name>``)."""

    name: str
    steps: Sequence[Step]
