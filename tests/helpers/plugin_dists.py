"""Make real, discoverable entry-point plugins in a temp dir (a module plus a .dist-info with
entry_points.txt), so plugin loading is tested through importlib metadata exactly as pip installs it."""

from __future__ import annotations

import os
from pathlib import Path


def make_dist(site: Path, dist: str, version: str, plugins: dict[str, str]) -> None:
    """``plugins`` maps entry-point name -> module source; each becomes ``<name>_mod.py``."""
    site.mkdir(parents=True, exist_ok=True)
    info = site / f"{dist.replace('-', '_')}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n")
    lines = ["[memtree]"]
    for name, source in plugins.items():
        module = f"{name.replace('-', '_')}_mod"
        (site / f"{module}.py").write_text(source)
        lines.append(f"{name} = {module}")
    (info / "entry_points.txt").write_text("\n".join(lines) + "\n")


def env_with(site: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMTREE_")}
    env["PYTHONPATH"] = str(site)
    env.update(extra)
    return env


GOOD = '''
from memtree_core.hookspecs import hookimpl


class Upper:
    name = "upper"
    priority = 50

    def matches(self, path):
        return path.endswith(".up")

    def chunk(self, path, text):
        from memtree_core.types import Chunk
        return [Chunk(1, max(1, text.count("\\n")), text.upper(), "upper")]


@hookimpl
def memtree_register_chunkers(register):
    register(Upper())
'''

RAISES_AT_IMPORT = '''
raise RuntimeError("boom at import")
'''

RAISES_IN_HOOK = '''
from memtree_core.hookspecs import hookimpl


@hookimpl
def memtree_register_filters(register):
    raise ValueError("boom in register hook")
'''

UNKNOWN_HOOK = '''
from memtree_core.hookspecs import hookimpl


@hookimpl
def memtree_register_chunkerz(register):
    pass
'''
