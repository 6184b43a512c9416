"""Built-in ``memtree`` subcommands, registered through ``memtree_register_commands`` like a third party's.

One module per command (``add_arguments``, ``run``, ``EXAMPLE``); each is imported only when its command runs
or its ``--help`` is asked.  The commands that must work with no plugin at all (``serve``, ``daemon``,
``stop``, ``doctor``, ``plugins``) are the host's own (``memtree_core.cli.HOST_COMMANDS``).
"""

from __future__ import annotations

from memtree_core.command import Command
from memtree_core.hookspecs import hookimpl
from memtree_core.registry import Register

# name -> (one-line help, module); in the order `memtree --help` lists them
BUILTIN_COMMANDS: dict[str, tuple[str, str]] = {
    "info": ("what is working and what is degraded, and why", "info"),
    "stats": ("nodes per kind and status, store size, walker and redaction counters", "stats"),
    "search": ("keyword search over the store, as the MCP 'search' tool does it", "search"),
    "show": ("print one stored node", "show"),
    "get": ("one page of a stored node within a token budget, as the MCP 'get' tool gives it", "get"),
    "recent": ("the newest nodes first, as the MCP 'recent' tool lists them", "recent"),
    "compose": ("pack nodes and their surroundings within a token budget (MCP 'compose')", "compose"),
    "walk": ("run the walkers (filter, staleness, pruner, ...) once or on their schedule", "walk"),
    "demo": ("index a sample project and drive the real server through an MCP client session", "demo"),
    "index": ("index a repository's files up front, so search finds code not read yet", "index"),
    "store": ("copy the project's local store to a shared PostgreSQL server ('store migrate --to URL')",
              "store"),
}


@hookimpl(trylast=True)
def memtree_register_commands(register: Register[Command]) -> None:
    for name, (help_text, module) in BUILTIN_COMMANDS.items():
        register(Command(name, help_text, f"{__name__}.{module}"))
