"""The ``memtree`` command line.  Each subcommand lives in ``memtree_core/commands/<name>.py`` with
``add_arguments(parser)``, ``run(args) -> int`` and an ``EXAMPLE`` for its help; only the module of the
command being run is imported (``serve`` must stay stdlib-only and fast), so ``memtree --help`` lists the
commands from :data:`COMMANDS` and ``memtree NAME --help`` shows that command's own arguments.

``memtree serve [--project DIR]``, what every agent session runs, skips argparse altogether (its imports --
argparse, gettext, locale, shutil, typing -- cost more than the rest of the forwarder's start-up).
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing on memtree serve's start-up path
if TYPE_CHECKING:
    import argparse
    from typing import NoReturn

COMMANDS: dict[str, str] = {
    "info": "what is working and what is degraded, and why",
    "plugins": "which plugins loaded from where, which failed and why, which are disabled",
    "stats": "nodes per kind and status, store size, walker and redaction counters",
    "serve": "the MCP server on stdio (forwards to the project's daemon, starting it when needed)",
    "daemon": "run the project's daemon in the foreground (normally started by 'serve')",
    "stop": "stop the project's daemon",
    "search": "keyword search over the store, as the MCP 'search' tool does it",
    "show": "print one stored node",
    "walk": "run the walkers (filter, staleness, pruner, ...) once or on their schedule",
    "demo": "index a sample project and drive the real server through an MCP client session",
    "reembed": "re-embed every live node with the configured embedding model",
    "doctor": "check the store; recover a damaged one into a new file (the old one is kept)",
    "import": "bring past Claude Code sessions' Read/Grep/Bash results into the store",
    "index": "index a repository's files up front, so search finds code not read yet",
}
MODULES = {"import": "import_"}  # a command whose name is a Python keyword lives in a module that is not
PROJECT_HELP = "the project directory (default: the current one)"


def _parser_class() -> type[argparse.ArgumentParser]:
    import argparse

    class _Parser(argparse.ArgumentParser):
        """argparse, but a bad argument is one line on stderr (no usage block) that says where help is."""

        def error(self, message: str) -> NoReturn:
            self.exit(2, f"{self.prog}: {message} (see '{self.prog} --help')\n")

    return _Parser


def _command_in(argv: list[str]) -> str | None:
    """The subcommand named on the command line: the first word that is not an option."""
    for word in argv:
        if not word.startswith("-"):
            return word if word in COMMANDS else None
    return None


def _parser(chosen: str | None) -> tuple[argparse.ArgumentParser, object | None]:
    """The full parser; only ``chosen``'s module is imported and given its arguments."""
    import argparse
    import importlib

    parser = _parser_class()(
        prog="memtree", description="A local context store for coding agents.",
        epilog="Run 'memtree COMMAND --help' for a command's arguments and an example.")
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    module = None
    for name, help_text in COMMANDS.items():
        if name != chosen:
            sub.add_parser(name, help=help_text)
            continue
        module = importlib.import_module(f"memtree_core.commands.{MODULES.get(name, name)}")
        example = getattr(module, "EXAMPLE", "")
        p = sub.add_parser(name, help=help_text, description=help_text,
                           epilog=f"example:\n  {example}" if example else None,
                           formatter_class=argparse.RawDescriptionHelpFormatter)
        p.add_argument("--project", default=None, metavar="DIR",
                       help=getattr(module, "PROJECT_HELP", PROJECT_HELP))
        module.add_arguments(p)
    return parser, module


def project_problem(project: str | None) -> str | None:
    """Why ``--project`` cannot be used, or None: checked once here so no command starts on a bad one."""
    if project is None:
        return None
    if not os.path.exists(project):
        return f"--project {project}: no such directory"
    if not os.path.isdir(project):
        return f"--project {project}: not a directory"
    return None


def _plain_serve(argv: list[str]) -> tuple[bool, str | None]:
    """``(True, project)`` when ``argv`` is exactly ``serve``, ``serve --project DIR`` or ``serve
    --project=DIR``; anything else (help, an unknown option, a value argparse would take for an option) goes
    through argparse, which answers it as it always did."""
    if not argv or argv[0] != "serve":
        return False, None
    rest = argv[1:]
    if not rest:
        return True, None
    if len(rest) == 2 and rest[0] == "--project" and not rest[1].startswith("-"):
        return True, rest[1]
    if len(rest) == 1 and rest[0].startswith("--project="):
        return True, rest[0].partition("=")[2]
    return False, None


def _serve(project: str | None) -> int:
    problem = project_problem(project)
    if problem:
        print(f"memtree serve: {problem}", file=sys.stderr)
        return 2
    from memtree_core.early_answer import answer

    try:
        early = answer(project)  # initialize, from the daemon's record, before the forwarder's imports
        from memtree_core.forwarder import main as forward

        return forward(project, early)
    except KeyboardInterrupt:
        return 130


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    plain, project = _plain_serve(argv)
    if plain:
        return _serve(project)
    chosen = _command_in(argv)
    parser, module = _parser(chosen)
    args = parser.parse_args(argv)  # bad arguments: argparse prints usage and one line, exit 2
    if args.version:
        from memtree_core import __version__

        print(__version__)
        return 0
    if not args.command or module is None:
        parser.print_help()
        return 2
    problem = None if getattr(module, "PROJECT_MAY_BE_GONE", False) else project_problem(args.project)
    if problem:
        print(f"memtree {args.command}: {problem}", file=sys.stderr)
        return 2
    try:
        code = int(module.run(args) or 0)  # type: ignore[attr-defined]
        sys.stdout.flush()  # here, not at exit: a reader that left (`| head`) is then caught below
        return code
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # `memtree info | head`: the reader left, which is not an error.  Point stdout at /dev/null so the
        # interpreter's final flush does not raise again (the recipe in Python's signal docs).
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141
    except Exception as exc:  # a clear one-line error for known failures, not a traceback
        from memtree_core.errors import UserFacingError

        if isinstance(exc, UserFacingError):
            print(f"memtree {args.command}: {exc}", file=sys.stderr)
            return 2
        raise


if __name__ == "__main__":
    sys.exit(main())
