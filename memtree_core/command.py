"""What a plugin registers to add a ``memtree`` subcommand (hook ``memtree_register_commands``).

A :class:`Command` names the subcommand, its one-line help, and its handler: a module path (imported only
when that command runs or its ``--help`` is asked) or any object with ``add_arguments(parser)`` (its
``argparse`` arguments) and ``run(args) -> int | None`` (the work; the exit status), and optionally ``EXAMPLE`` (one command line, shown by ``--help``), ``PROJECT_HELP`` (how ``--project`` is
described) and ``PROJECT_MAY_BE_GONE`` (true when the command must run for a deleted project directory).
Every command gets ``--project DIR``.  A :class:`~memtree_core.errors.UserFacingError` raised by ``run`` is
printed as one line, exit 2.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing on memtree serve's start-up path
if TYPE_CHECKING:
    from typing import Any


class Command:
    """A subcommand: its name, one-line help and handler.  (A plain class, not a dataclass: ``memtree serve``
    imports this module and must not pay for ``dataclasses``.)"""

    __slots__ = ("name", "help", "handler")

    def __init__(self, name: str, help: str, handler: Any) -> None:
        self.name = name
        self.help = help
        self.handler = handler  # a module path ("pkg.module") or an object with add_arguments() and run()

    def __repr__(self) -> str:
        return f"Command({self.name!r}, {self.help!r}, {self.handler!r})"

    def load(self) -> Any:
        """The handler itself (its module imported now, if it was given as a path)."""
        if isinstance(self.handler, str):
            import importlib

            return importlib.import_module(self.handler)
        return self.handler
