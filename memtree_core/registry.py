"""A host-owned registry of named things (chunkers, tools, rules...) with an explicit conflict rule.

Plugins never touch a registry directly: each register hook receives a :class:`Register` bound to the
plugin that is calling it, so the host always knows who supplied what.  Two plugins registering the same
name is an error naming both, unless the newcomer says ``replaces=True``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Generic, TypeVar

T = TypeVar("T")


class RegistryConflict(Exception):
    """Two plugins registered the same name and the newcomer did not declare ``replaces``."""


@dataclass
class Entry(Generic[T]):
    name: str
    item: T
    plugin: str
    replaced: str | None = None  # plugin whose entry this one replaced
    rank: int = 0  # its plugin's place in pluggy's call order for the register hook (0: called first)
    seq: int = 0  # when it was registered (orders one plugin's items)


class Registry(Generic[T]):
    """Items of one kind keyed by name.  Iterating, :meth:`names`, :meth:`entries` and :meth:`ranked` all give
    them in precedence order (:meth:`ranked`), the one order for every kind."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._seq = 0
        self._order: list[Entry[T]] | None = None  # entries() until the next change
        self._entries: dict[str, Entry[T]] = {}
        self._removed: dict[str, str] = {}  # name -> plugin that removed it
        # plugin -> what its add/remove calls displaced, oldest first: (name, previous entry, its position)
        self._undo: dict[str, list[tuple[str, Entry[T] | None, int]]] = {}

    def _note(self, plugin: str, name: str) -> None:
        self._order = None
        names = list(self._entries)
        position = names.index(name) if name in self._entries else len(names)
        self._undo.setdefault(plugin, []).append((name, self._entries.get(name), position))

    def add(self, name: str, item: T, plugin: str, *, replaces: bool = False, rank: int = 0) -> None:
        current = self._entries.get(name)
        if current is not None and not replaces:
            raise RegistryConflict(
                f"{self.kind} {name!r} from plugin {plugin!r} clashes with the one from plugin "
                f"{current.plugin!r}; register it with replaces=True to override it, or disable one "
                f"of the two plugins (MEMTREE_DISABLE_PLUGINS)"
            )
        self._note(plugin, name)
        self._seq += 1
        self._entries[name] = Entry(name, item, plugin, current.plugin if current else None, rank, self._seq)
        self._removed.pop(name, None)

    def remove(self, name: str, plugin: str) -> None:
        if name in self._entries:
            self._note(plugin, name)
            del self._entries[name]
            self._removed[name] = plugin

    def drop(self, name: str) -> None:
        """Take ``name`` out of use (it broke its contract); no plugin's doing, so nothing to undo."""
        if self._entries.pop(name, None) is not None:
            self._order = None

    def withdraw(self, plugin: str) -> None:
        """Undo everything ``plugin`` did here: what it added goes, what it removed or replaced comes back
        in its old place.  A plugin that fails halfway must not leave a built-in (a redaction rule) gone."""
        self._order = None
        for name, previous, position in reversed(self._undo.pop(plugin, [])):
            current = self._entries.get(name)
            if current is not None and current.plugin == plugin:
                del self._entries[name]
            if previous is not None and name not in self._entries:
                items = list(self._entries.items())
                items.insert(min(position, len(items)), (name, previous))
                self._entries = dict(items)
            if self._removed.get(name) == plugin:
                del self._removed[name]

    def get(self, name: str) -> T | None:
        entry = self._entries.get(name)
        return entry.item if entry else None

    def entry(self, name: str) -> Entry[T] | None:
        return self._entries.get(name)

    def __getitem__(self, name: str) -> T:
        try:
            return self._entries[name].item
        except KeyError:
            known = ", ".join(self._entries) or "none"
            raise KeyError(f"no {self.kind} named {name!r} (registered: {known})") from None

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[T]:
        return iter(self.ranked())

    def __len__(self) -> int:
        return len(self._entries)

    def ranked(self) -> list[T]:
        """The items in precedence order, the one rule for every kind (:mod:`memtree_core.hookspecs`): the highest
        ``priority`` first (0 without one), then pluggy's call order of the plugins' register hooks, then the
        order one plugin registered them."""
        return [e.item for e in self.entries()]

    def names(self) -> list[str]:
        return [e.name for e in self.entries()]

    def entries(self) -> list[Entry[T]]:
        if self._order is None:
            self._order = sorted(list(self._entries.values()), key=lambda e: (-_priority(e.item), e.rank, e.seq))
        return list(self._order)

    @property
    def removed(self) -> dict[str, str]:
        return dict(self._removed)


def _priority(item: object) -> float:
    value = getattr(item, "priority", 0)
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else 0


class Register(Generic[T]):
    """The callable a register hook receives; bound to one registry and one plugin.

    ``register(item)`` adds ``item`` under ``item.name``; ``register(item, replaces=True)`` overrides an
    earlier entry of the same name; ``register.remove(name)`` withdraws an entry (to disable a built-in).
    """

    def __init__(self, registry: Registry[T], plugin: str, *, rank: int = 0) -> None:
        self._registry = registry
        self.plugin = plugin
        self._rank = rank

    def __call__(self, item: T, *, name: str | None = None, replaces: bool = False) -> T:
        key = name or getattr(item, "name", None)
        if not key:
            raise ValueError(f"{self._registry.kind} from plugin {self.plugin!r} has no name")
        self._registry.add(key, item, self.plugin, replaces=replaces, rank=self._rank)
        return item

    def remove(self, name: str) -> None:
        self._registry.remove(name, self.plugin)
