"""The ``probe`` plugin: chunkers, a filter, a walker and a command policy that each lean on one clause of
memtree's plugin contract (see this distribution's README)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from memtree_core.hookspecs import hookimpl
from memtree_core.plugin_settings import PluginSettings
from memtree_core.types import Chunk


class ProbeSettings(PluginSettings):
    label: str = "plain"
    width: Annotated[int, Field(ge=1, le=50)] = 2


@hookimpl
def memtree_settings_model() -> type[ProbeSettings]:
    return ProbeSettings


class Configured:
    """What every configurable item here keeps of ``configure(settings, app)``."""

    settings: ProbeSettings | None = None

    def configure(self, settings: ProbeSettings, app: Any) -> None:
        self.settings = settings


class GappyChunker:
    """Breaks the tiling rule: its chunks skip the file's second line."""

    name = "probe-gappy"
    priority = 10

    def matches(self, path: str) -> bool:
        return path.endswith(".gappy")

    def chunk(self, path: str, text: str) -> list[Chunk]:
        lines = text.splitlines(keepends=True)
        return [Chunk(1, 1, lines[0], "probe"), Chunk(3, len(lines), "".join(lines[2:]), "probe")]


class LinesChunker(Configured):
    """Keeps the rule: runs of ``width`` lines, ``width`` from its plugin's settings."""

    name = "probe-lines"
    priority = 10

    def matches(self, path: str) -> bool:
        return path.endswith(".probe")

    def chunk(self, path: str, text: str) -> list[Chunk]:
        width = self.settings.width if self.settings else 1
        lines = text.splitlines(keepends=True)
        return [Chunk(i + 1, min(i + width, len(lines)), "".join(lines[i:i + width]), "probe")
                for i in range(0, len(lines), width)]

    def availability(self) -> dict[str, str | None]:
        return {"probe": None, "probe-binary": "no grammar for it here"}


class LabelFilter(Configured):
    name = "probe-filter"

    def check(self, node: Any, app: Any) -> str | None:
        return None


class PeekWalker(Configured):
    """Reports what it was handed: counters for ``memtree walk`` and the tests."""

    name = "probe-peek"
    trigger = "interval"

    def interval_s(self, app: Any) -> float:
        return 3600.0

    def has_work(self, app: Any) -> bool:
        return True

    def run(self, app: Any) -> dict[str, int]:
        reached = {name: int(hasattr(app, name)) for name in ("close", "damaged", "mark_damaged", "_store")}
        return {"store_nodes_visible": int(app.store.query_one("SELECT count(*) FROM nodes")[0] >= 0),
                "plugins_pm": int(hasattr(app.plugins, "pm")),
                "configured_width": self.settings.width if self.settings else 0,
                **{f"has_{k}": v for k, v in reached.items()}}


class HalfSelector:
    """Not a selector: it has no ``select`` (the ``Selector`` protocol's)."""

    name = "probe-half-selector"
    priority = 0

    def matches(self, tool: str, command: str) -> bool:
        return True


class NormalPolicy:
    name = "probe-normal"

    def check(self, command: str, app: Any) -> str | None:
        return "probe-normal" if command.startswith("probe-deny") else None


@hookimpl
def memtree_register_chunkers(register: Any) -> None:
    register(GappyChunker())
    register(LinesChunker())


@hookimpl
def memtree_register_filters(register: Any) -> None:
    register(LabelFilter())


@hookimpl
def memtree_register_walkers(register: Any) -> None:
    register(PeekWalker())


@hookimpl
def memtree_register_command_policies(register: Any) -> None:
    register(NormalPolicy())


@hookimpl
def memtree_register_selectors(register: Any) -> None:
    register(HalfSelector())
