"""The ``memtree`` command line: host dispatch only (docs/architecture.md#the-plugin-host).

Commands come from plugins (``memtree_register_commands``), except the host's own (:data:`HOST_COMMANDS`,
dispatched before any plugin loads).  ``commands/table.json`` describes every shipped command (help, plugin,
module, arguments, and each ``--help`` as argparse prints it at 80 columns), written by
tests/helpers/command_table.py and kept so by tests/core/test_cli.py: when nothing can change the list, ``--help``
loads no plugin and imports no command's code (nor argparse, at 80 columns).  ``memtree serve`` skips argparse.
"""

from __future__ import annotations

import os
import sys
from types import SimpleNamespace

from memtree_core.command import Command
from memtree_core.forwarder.records import answer, loads

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing on memtree serve's start-up path
if TYPE_CHECKING:
    import argparse
    from typing import Any, NoReturn

HOST_COMMANDS: dict[str, Command] = {c.name: c for c in (
    Command("plugins", "which plugins loaded from where, which failed and why, which are disabled",
            "memtree_core.commands.plugins"),
    Command("serve", "the MCP server on stdio (forwards to the project's daemon, starting it when needed)",
            "memtree_core.daemon.commands.serve"),
    Command("daemon", "run the project's daemon in the foreground (normally started by 'serve')",
            "memtree_core.daemon.commands.daemon"),
    Command("stop", "stop the project's daemon", "memtree_core.daemon.commands.stop"),
    Command("doctor", "check the store; recover a damaged one into a new file (the old one is kept)",
            "memtree_core.daemon.commands.doctor"),
)}
TABLE = os.path.join(os.path.dirname(__file__), "commands", "table.json")
PROJECT_HELP = "the project directory (default: the current one)"


def _parser_class() -> type[argparse.ArgumentParser]:
    import argparse

    class _Parser(argparse.ArgumentParser):
        """argparse, but a bad argument is one line on stderr (no usage block) that says where help is."""

        def error(self, message: str) -> NoReturn:
            where = vars(self).get("help_for", self.prog)  # the subcommand's own help, where one was named
            self.exit(2, f"{self.prog}: {message} (see '{where} --help')\n")

    return _Parser


def plugin_commands(environ: dict[str, str] | None = None) -> dict[str, tuple[Command, str]]:
    """name -> (command, the plugin that registered it), from the plugins the user's own choices select.

    A repository's ``.memtree.json`` does not take part: the project is not known until the arguments are
    parsed, and a cloned repository must not change what ``memtree`` itself offers.  A bad user setting
    falls back to the defaults here; the command reports it when it loads the project's settings."""
    from memtree_core.forwarder.paths import memtree_home
    from memtree_core.plugins import build
    from memtree_core.settings import Settings, SettingsError, host_settings, read_layers

    env = dict(os.environ) if environ is None else environ
    try:
        settings = host_settings(read_layers(memtree_home(env), None, env)).settings
    except SettingsError:
        settings = Settings()
    registry = build(settings, env, kinds=("commands",)).commands
    out: dict[str, tuple[Command, str]] = {}
    for entry in registry.entries():
        if entry.name in HOST_COMMANDS:
            print(f"memtree: the command {entry.name!r} from plugin {entry.plugin!r} is ignored: "
                  f"'{entry.name}' is memtree's own", file=sys.stderr)
            continue
        out[entry.name] = (entry.item, entry.plugin)
    return out


def _plugin_metadata_present() -> bool:
    """Whether a distribution declares ``memtree`` entry points, from its ``*-info`` folder (importlib.metadata costs more)."""
    for base in (p or "." for p in sys.path):
        if os.path.isfile(base):
            return True  # a zipped distribution: only importlib.metadata reads those
        try:
            for name in os.listdir(base):
                path = os.path.join(base, name, "entry_points.txt") if name.endswith("-info") else ""
                if path and os.path.isfile(path):
                    with open(path, "rb") as f:
                        if b"[memtree]" in f.read():
                            return True
        except OSError:
            continue
    return False


def command_table(part: str = "commands") -> dict[str, Any]:
    """:data:`TABLE`'s commands (name -> help, plugin, module, example, project_help, arguments), or another part."""
    try:
        with open(TABLE, "rb") as f:
            return loads(f.read())[part]
    except (OSError, ValueError, KeyError, TypeError):
        return {}


def rendered_help(argv: list[str]) -> str | None:
    """``memtree [COMMAND] --help`` from the table when argparse would print that text (its Python, 80 columns)."""
    columns = int(os.environ["COLUMNS"]) if os.environ.get("COLUMNS", "").isdigit() else 0
    try:
        columns = columns or os.get_terminal_size(sys.__stdout__.fileno()).columns or 80
    except (AttributeError, ValueError, OSError):
        columns = 80
    asked = 0 < len(argv) <= 2 and argv[-1] in ("-h", "--help") and columns == 80
    rendered = command_table("rendered") if asked else {}
    same = rendered.get("python") == "{}.{}".format(*sys.version_info[:2])
    return rendered.get("help", {}).get(argv[0] if len(argv) == 2 else "") if same else None


def builtin_commands(environ: dict[str, str]) -> dict[str, tuple[Command, str]] | None:
    """:func:`plugin_commands` without loading any plugin, or None when only loading them can tell: a
    third-party plugin is installed, or the user's config or ``MEMTREE_PLUGINS__*`` chooses plugins."""
    shipped = command_table()
    if any(key.upper().startswith("MEMTREE_PLUGINS") for key in environ) or not shipped:
        return None
    try:  # $MEMTREE_HOME/config.json (forwarder.paths.memtree_home's, without pathlib)
        with open(os.path.expanduser(environ.get("MEMTREE_HOME") or "~/.memtree") + "/config.json", "rb") as f:
            config = loads(f.read(1024 * 1024 + 1) or b"{}")
        if not isinstance(config, dict) or "plugins" in config:
            return None
    except FileNotFoundError:
        pass
    except (OSError, ValueError):
        return None  # the slow path reports it as it always did
    if _plugin_metadata_present():
        return None
    disabled = {name.strip() for name in environ.get("MEMTREE_DISABLE_PLUGINS", "").split(",")} | {"memtree"}
    return {name: (Command(name, c["help"], c["module"]), c["plugin"]) for name, c in shipped.items()
            if c["plugin"] not in disabled}


def described(entry: dict[str, Any]) -> Any:
    """A command's handler as its :data:`TABLE` entry describes it: enough for its ``--help``, nothing more."""
    from argparse import SUPPRESS

    return SimpleNamespace(  # (argparse tells SUPPRESS by identity; JSON gives an equal string)
        EXAMPLE=entry["example"], PROJECT_HELP=entry["project_help"] or PROJECT_HELP, described=True,
        add_arguments=lambda p: [p.add_argument(*a, **{k: SUPPRESS if v == SUPPRESS else v for k, v in kw.items()})
                                 for a, kw in entry["arguments"]])


def _parser(table: dict[str, tuple[Command, str]], chosen: str | None,
            describe: bool = False) -> tuple[argparse.ArgumentParser, Any]:
    """The full parser; only ``chosen``'s handler is loaded (with ``describe``, its description in
    :data:`TABLE` if there is one: enough for ``--help``) and given its arguments."""
    import argparse

    parser = _parser_class()(
        prog="memtree", description="A local context store for coding agents.",
        epilog="Run 'memtree COMMAND --help' for a command's arguments and an example.")
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    unchosen = type(parser)(add_help=False)  # argparse runs only the chosen command's parser: the rest share one
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=lambda **kwargs: (
        unchosen if kwargs.get("add_help") is False else type(parser)(**kwargs)))
    handler = None
    for name, (command, plugin) in table.items():
        if name != chosen:
            sub.add_parser(name, help=command.help, add_help=False)
            continue
        entry = command_table().get(name, {}) if describe else {}
        try:
            known = entry.get("module") == command.handler and entry.get("arguments") is not None
            handler = described(entry) if known else command.load()
        except Exception as exc:  # a third party's module that does not import: one line, as for bad input
            parser.exit(2, f"memtree {name}: the command from plugin {plugin!r} cannot be loaded "
                           f"({type(exc).__name__}: {exc}); see 'memtree plugins'\n")
        example = getattr(handler, "EXAMPLE", "")
        p = sub.add_parser(name, help=command.help, description=command.help,
                           epilog=f"example:\n  {example}" if example else None,
                           formatter_class=argparse.RawDescriptionHelpFormatter)
        p.add_argument("--project", default=None, metavar="DIR",
                       help=getattr(handler, "PROJECT_HELP", PROJECT_HELP))
        handler.add_arguments(p)
    return parser, handler


def project_problem(project: str | None) -> str | None:
    """Why ``--project`` cannot be used, or None: checked once here so no command starts on a bad one."""
    if project is None or os.path.isdir(project):
        return None
    return f"--project {project}: {'not a directory' if os.path.exists(project) else 'no such directory'}"


def main(argv: list[str] | None = None) -> int:
    from memtree_core.forwarder.argv import plain_serve

    argv = sys.argv[1:] if argv is None else argv
    plain, project = plain_serve(argv)
    if plain and not project_problem(project):  # (a bad --project is reported below, as for any command)
        try:
            early = answer(project)  # initialize answered from the record before anything of the daemon's loads
        except KeyboardInterrupt:
            return 130
        from memtree_core.daemon.commands.serve import serve

        return serve(project, early)
    chosen = next((word for word in argv if not word.startswith("-")), None)  # the first word not an option
    host = {name: (c, "memtree") for name, c in HOST_COMMANDS.items()}
    version_only = chosen is None and "--version" in argv and not {"-h", "--help"} & set(argv)
    shipped_only = not os.environ.get("MEMTREE_DISABLE_PLUGINS")  # then every shipped command is there
    if chosen in HOST_COMMANDS or version_only:
        table = host  # dispatched before any plugin loads: 'serve' starts at Python's own speed
    else:
        table = builtin_commands(dict(os.environ))  # type: ignore[assignment]
        if table is None:
            shipped_only = False
            from memtree_core.plugins import PluginLoadError

            try:
                table = plugin_commands()
            except PluginLoadError as exc:  # MEMTREE_STRICT_PLUGINS=1 and a plugin failed
                print(f"memtree: {exc}", file=sys.stderr)
                return 2
            table = {**{n: table[n] for n in command_table() if n in table}, **table}  # the fast path's order
        table = {**table, **host}
    text = rendered_help(argv) if shipped_only else None
    if text is not None:
        sys.stdout.write(text)
        return 0
    helping = {"-h", "--help"} & set(argv[:argv.index("--")] if "--" in argv else argv)
    for describe in (True, False) if helping else (False,):  # the table's description only prints --help
        parser, module = _parser(table, chosen if chosen in table else None, describe)
        parser.help_for = f"memtree {chosen}" if module is not None else "memtree"  # type: ignore[attr-defined]
        args = parser.parse_args(argv)  # bad arguments: one line, exit 2; --help: the help, exit 0
        if not (isinstance(module, SimpleNamespace) and module.described):
            break  # (else argparse went on past --help: the command's own parser decides)
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
