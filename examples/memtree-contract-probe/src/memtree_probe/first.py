"""The ``probe-first`` plugin: its hook is ``tryfirst``, so in pluggy's order (memtree's one order for every
kind) its command policy comes before every other plugin's."""

from __future__ import annotations

from typing import Any

from memtree_core.hookspecs import hookimpl


class FirstPolicy:
    name = "probe-first"

    def check(self, command: str, app: Any) -> str | None:
        return "probe-first" if command.startswith("probe-deny") else None


@hookimpl(tryfirst=True)
def memtree_register_command_policies(register: Any) -> None:
    register(FirstPolicy())
