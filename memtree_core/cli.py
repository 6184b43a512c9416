"""The ``memtree`` command line.  Each subcommand lives in ``memtree_core/commands/<name>.py`` with
``add_arguments(parser)`` and ``run(args) -> int``, imported only when it runs (``serve`` must stay
stdlib-only and fast)."""

from __future__ import annotations

import argparse
import importlib
import sys

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
}


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="memtree", description="A local context store for coding agents.")
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, help_text in COMMANDS.items():
        p = sub.add_parser(name, help=help_text, description=help_text)
        p.add_argument("--project", default=None, help="the project directory (default: the current one)")
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = _parser()
    # Parse the command name first so only that command's module is imported.
    args, _ = parser.parse_known_args(argv)
    if args.version:
        from memtree_core import __version__

        print(__version__)
        return 0
    if not args.command:
        parser.print_help()
        return 2
    module = importlib.import_module(f"memtree_core.commands.{args.command}")
    sub = argparse.ArgumentParser(prog=f"memtree {args.command}", description=COMMANDS[args.command])
    sub.add_argument("--project", default=None, help="the project directory (default: the current one)")
    module.add_arguments(sub)
    full = sub.parse_args(argv[argv.index(args.command) + 1:])
    try:
        return int(module.run(full) or 0)
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # a clear one-line error for known failures, not a traceback
        from memtree_core.errors import UserFacingError

        if isinstance(exc, UserFacingError):
            print(f"memtree {args.command}: {exc}", file=sys.stderr)
            return 2
        raise


if __name__ == "__main__":
    sys.exit(main())
