"""An example plugin for ``memtree_register_tools`` (docs/hooks.md shows it; a test loads it)."""

from memtree_core.hookspecs import hookimpl
from memtree_core.types import ToolSpec


def build_echo(app):
    def echo(text: str) -> str:
        """Say the text back (a tool's docstring and type hints are its description and input schema)."""
        return text

    return echo


@hookimpl
def memtree_register_tools(register):
    register(ToolSpec("echo", build_echo, description="Say the text back", read_only=True))
    register.remove("recent")  # withdraw a tool another plugin registered
