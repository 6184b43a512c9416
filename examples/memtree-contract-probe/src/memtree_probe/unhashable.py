"""The ``probe-object`` plugin: its entry point names an object, a dataclass instance (which Python makes
unhashable), whose methods are the hook implementations."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from memtree_core.hookspecs import hookimpl


class ObjectFilter:
    name = "probe-object-filter"

    def check(self, node: Any, app: Any) -> str | None:
        return None


@dataclass
class ObjectPlugin:
    label: str = "object"

    @hookimpl
    def memtree_register_filters(self, register: Any) -> None:
        register(ObjectFilter())


PLUGIN = ObjectPlugin()
