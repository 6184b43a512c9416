"""Write ``memtree_core/commands/table.json`` from the commands themselves: every command memtree ships (the
host's own and the built-in plugins'), with its one-line help, plugin, module, example and the arguments its
``add_arguments`` adds, so ``memtree --help`` and ``memtree COMMAND --help`` need none of their code.

A development tool, not part of memtree: it lives with the tests, is not in the wheel, and nothing under
``memtree_core`` or ``memtree_plugins`` imports it.  Run it from a checkout with memtree installed:

    python tests/helpers/command_table.py            # print the table
    python tests/helpers/command_table.py --write    # replace memtree_core/commands/table.json

``tests/core/test_cli.py`` checks that the file holds exactly what this makes, and that each command's
``--help`` from the table is the one its own module gives, so the table cannot drift from the code.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import sys
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
TABLE = REPO / "memtree_core" / "commands" / "table.json"
ABOUT = ("Every command memtree ships, for `memtree --help` and a command's --help without importing it; "
         "written by tests/helpers/command_table.py from the commands themselves (do not edit).")
WIDTHS = (50, 80, 132)  # the terminal widths a description's --help is compared at
# `memtree --help`'s order of the built-in plugins' commands (a new one goes last until it is placed here);
# the host's own follow
ORDER = ("setup", "info", "stats", "search", "show", "get", "recent", "compose", "walk", "demo", "reembed", "import",
         "index", "redact", "digest", "ui")


class _Recorder(argparse.ArgumentParser):
    """A parser that keeps every ``add_argument`` call made on it."""

    def __init__(self, **kwargs: Any) -> None:
        self.calls: list[tuple[list[Any], dict[str, Any]]] = []
        super().__init__(**kwargs)

    def add_argument(self, *args: Any, **kwargs: Any) -> Any:
        self.calls.append((list(args), dict(kwargs)))
        return super().add_argument(*args, **kwargs)


def _plain(value: Any) -> Any:
    """``value`` as JSON gives it back (tuples become lists)."""
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def help_text(name: str, handler: Any, width: int) -> str:
    """What ``memtree NAME --help`` prints for this handler at this terminal width."""
    from memtree_core.cli import _parser
    from memtree_core.command import Command

    parser, _ = _parser({name: (Command(name, "one line", handler), "memtree")}, name)
    return _printed(width, lambda: parser.parse_args([name, "--help"]))


def arguments(name: str, handler: Any) -> list[list[Any]] | None:
    """The ``add_argument`` calls of ``handler.add_arguments`` as JSON (without ``type=``, which only parsing
    uses), or None when they cannot give the same ``--help`` (groups, a custom action, a value JSON cannot
    hold): that command's ``--help`` then imports its module."""
    from memtree_core.cli import described

    recorder = _Recorder(add_help=False)
    handler.add_arguments(recorder)
    calls = [[args, {k: v for k, v in kwargs.items() if k != "type"}] for args, kwargs in recorder.calls]
    if len(calls) != len(recorder._actions):
        return None  # arguments added some other way (an argument group)
    try:
        if json.loads(json.dumps(calls)) != _plain(calls):
            return None
    except (TypeError, ValueError):
        return None
    replayed = described({"example": getattr(handler, "EXAMPLE", ""), "arguments": json.loads(json.dumps(calls)),
                          "project_help": getattr(handler, "PROJECT_HELP", None)})
    if any(help_text(name, replayed, w) != help_text(name, handler, w) for w in WIDTHS):
        return None
    return _plain(calls)


def table() -> dict[str, Any]:
    """The table as it should be: the built-in plugins' commands in ``memtree --help``'s order, then the host's."""
    from memtree_core.cli import HOST_COMMANDS, plugin_commands

    builtin = plugin_commands({"MEMTREE_LOAD_PLUGINS": ""})
    shipped = [builtin[name] for name in sorted(builtin, key=lambda n: ORDER.index(n) if n in ORDER else len(ORDER))]
    shipped += [(c, "memtree") for c in HOST_COMMANDS.values()]
    commands = {}
    for command, plugin in shipped:
        handler = command.load()
        commands[command.name] = {
            "help": command.help, "plugin": plugin, "module": command.handler,
            "example": getattr(handler, "EXAMPLE", ""), "project_help": getattr(handler, "PROJECT_HELP", None),
            "arguments": arguments(command.name, handler)}
    return {"about": ABOUT, "commands": commands, "rendered": rendered(shipped)}


def _printed(width: int, run: Any) -> str:
    saved = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = str(width)
    out = io.StringIO()
    try:
        with redirect_stdout(out):
            try:
                run()
            except SystemExit:
                pass
    finally:
        if saved is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = saved
    return out.getvalue()


def rendered(shipped: list[tuple[Any, str]]) -> dict[str, Any]:
    """Each ``--help`` as argparse prints it at 80 columns on this Python, from the commands' own modules (what
    ``memtree --help`` and a command's ``--help`` print from the table: the test of each command's described
    help keeps the two equal)."""
    from memtree_core.cli import _parser

    every = {command.name: (command, plugin) for command, plugin in shipped}

    def text(chosen: str | None) -> str:
        parser, _ = _parser(every, chosen)  # only the chosen command's module is loaded
        return _printed(80, lambda: parser.parse_args([chosen, "--help"] if chosen else ["--help"]))

    texts = {"": text(None), **{name: text(name) for name in every}}
    return {"python": "{}.{}".format(*sys.version_info[:2]), "columns": 80, "help": texts}


def render(value: dict[str, Any]) -> str:
    """The table as JSON, one command's fields and each of its arguments on a line of their own."""
    def line(v: Any) -> str:
        return json.dumps(v, ensure_ascii=False)

    commands = []
    for name, c in value["commands"].items():
        fields = ", ".join(f"{line(k)}: {line(v)}" for k, v in c.items() if k != "arguments")
        args = "null" if c["arguments"] is None else \
            "[" + ",".join(f"\n   {line(a)}" for a in c["arguments"]) + ("\n  ]" if c["arguments"] else "]")
        commands.append(f"  {line(name)}: {{{fields},\n  \"arguments\": {args}}}")
    texts = ",\n".join(f"   {line(k)}: {line(v)}" for k, v in value["rendered"]["help"].items())
    rendered = (f'{{"python": {line(value["rendered"]["python"])}, "columns": {value["rendered"]["columns"]}, '
                f'"help": {{\n{texts}\n }}}}')
    return (f'{{\n "about": {line(value["about"])},\n "commands": {{\n' + ",\n".join(commands)
            + f'\n }},\n "rendered": {rendered}\n}}\n')


if __name__ == "__main__":
    text = render(table())
    if sys.argv[1:] == ["--write"]:
        TABLE.write_text(text, encoding="utf-8")
        print(f"wrote {TABLE.relative_to(REPO)}")
    else:
        sys.stdout.write(text)
