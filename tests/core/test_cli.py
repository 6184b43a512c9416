"""The ``memtree`` command line as a newcomer meets it: every bad input gets one line on stderr and a
non-zero exit (never a traceback), and every subcommand's ``--help`` shows its own arguments and an example.
All through the installed console script, as real subprocesses."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.common import MEMTREE, REPO, commands, run_memtree

COMMANDS = commands()  # name -> one-line help: the host's own and the built-in plugins'


def assert_one_line_error(out, *expected: str) -> str:
    err = out.stderr.strip()
    assert out.returncode != 0, (out.stdout, out.stderr)
    assert "Traceback" not in out.stderr and "ExceptionGroup" not in out.stderr, out.stderr
    assert len(err.splitlines()) == 1, out.stderr
    for text in expected:
        assert text in err, err
    return err


# -- bad input: one line, non-zero exit --------------------------------------------------------------------
@pytest.mark.parametrize("command", ["demo", "serve", "info", "stats", "search"])
def test_a_project_that_does_not_exist_is_one_line(command: str, home: Path, tmp_path: Path) -> None:
    missing = tmp_path / "no-such-project"
    extra = ["foo"] if command == "search" else []
    out = run_memtree(command, "--project", str(missing), *extra, cwd=tmp_path, input="")
    assert_one_line_error(out, f"memtree {command}:", "no such directory")
    assert not missing.exists()
    assert "kept:" not in out.stdout


def test_serve_reads_its_own_arguments_as_argparse_would(home: Path, tmp_path: Path) -> None:
    """``memtree serve [--project DIR]`` skips argparse (start-up time); every other form still goes through it."""
    missing = tmp_path / "no-such-project"
    out = run_memtree("serve", f"--project={missing}", cwd=tmp_path, input="")
    assert_one_line_error(out, "memtree serve:", "no such directory")
    assert_one_line_error(run_memtree("serve", "--project", cwd=tmp_path, input=""), "--project", "expected one argument")
    assert_one_line_error(run_memtree("serve", "--project", "-x", cwd=tmp_path, input=""), "expected one argument")
    assert_one_line_error(run_memtree("serve", "--bogus", cwd=tmp_path, input=""), "unrecognized arguments: --bogus")
    helped = run_memtree("serve", "--help", cwd=tmp_path)
    assert helped.returncode == 0 and "memtree serve --project ~/src/myrepo" in helped.stdout


def test_a_bad_option_points_at_the_commands_own_help(home: Path, tmp_path: Path) -> None:
    out = run_memtree("search", "--frobnicate", "x", cwd=tmp_path)
    assert_one_line_error(out, "unrecognized arguments: --frobnicate", "see 'memtree search --help'")
    out = run_memtree("frobnicate", cwd=tmp_path)
    assert_one_line_error(out, "invalid choice: 'frobnicate'", "see 'memtree --help'")


def test_a_file_given_as_the_project_is_one_line(home: Path, tmp_path: Path) -> None:
    out = run_memtree("demo", "--project", str(REPO / "README.md"), cwd=tmp_path)
    assert_one_line_error(out, "memtree demo:", "not a directory")


def test_a_bad_setting_stops_the_demo_with_one_line_naming_it(home: Path, tmp_path: Path) -> None:
    out = run_memtree("demo", cwd=tmp_path, env={"MEMTREE_CAPTURE__MAX_BYTES": "abc"})
    assert_one_line_error(out, "MEMTREE_CAPTURE__MAX_BYTES", "capture.maxBytes", "'abc'")


def test_the_demo_on_an_empty_directory_says_so(home: Path, tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    out = run_memtree("demo", "--project", str(empty), cwd=empty)
    assert_one_line_error(out, "no files to show")


def test_an_unknown_kind_is_rejected_with_the_valid_ones(home: Path, project: Path) -> None:
    from memtree_core.store import KINDS

    out = run_memtree("search", "--kind", "file_chunk,bogus", "foo", cwd=project)
    err = assert_one_line_error(out, "'bogus'")
    assert all(k in err for k in KINDS)


def test_an_unknown_mode_is_rejected_with_the_valid_ones(home: Path, project: Path) -> None:
    from memtree_plugins.retrieval.search import MODES

    out = run_memtree("search", "--mode", "fuzzy", "foo", cwd=project)
    err = assert_one_line_error(out, "'fuzzy'")
    assert all(m in err for m in MODES)


def test_the_cli_lists_are_the_codes_lists() -> None:
    """search's --help spells out its choices without importing the store; they must not drift."""
    from memtree_core.store import KINDS
    from memtree_plugins.commands import search as command
    from memtree_plugins.retrieval.search import MODES

    assert command.KINDS == KINDS and command.MODES == MODES


def test_an_unknown_node_names_a_command_that_exists(home: Path, project: Path) -> None:
    out = run_memtree("show", "NOTANID", cwd=project)
    err = assert_one_line_error(out, "'NOTANID'")
    named = re.findall(r"'memtree (\w+)", err)
    assert named and all(n in COMMANDS for n in named), err


@pytest.mark.parametrize("argv", [["bogus"], ["show", "--offset", "x", "N"], ["search"], ["info", "--nope"]])
def test_argument_errors_are_one_line_that_points_at_help(argv: list[str], home: Path, project: Path) -> None:
    out = run_memtree(*argv, cwd=project)
    assert_one_line_error(out, "--help")


# -- help ------------------------------------------------------------------------------------------------
def test_top_level_help_lists_every_command(tmp_path: Path) -> None:
    out = run_memtree("--help", cwd=tmp_path)
    assert out.returncode == 0
    for name, summary in COMMANDS.items():
        assert name in out.stdout and summary[:30] in " ".join(out.stdout.split())


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_command_has_its_own_help_with_an_example(command: str, tmp_path: Path) -> None:
    out = run_memtree(command, "--help", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert text.startswith(f"usage: memtree {command}")
    assert COMMANDS[command] in " ".join(text.split())
    example = text.split("example:\n", 1)[1].strip()
    assert example.startswith(f"memtree {command}")


@pytest.mark.parametrize(("command", "wanted"), [
    ("search", ["query", "--mode", "{auto,keyword,semantic,hybrid}", "--kind", "file_chunk", "--json",
                "--limit", "--status", "--path", "--since"]),
    ("show", ["node", "--offset", "--json"]),
    ("info", ["--json", "--project"]),
    ("stats", ["--json"]),
    ("stop", ["--all", "--force"]),
    ("walk", ["--once", "--only"]),
    ("demo", ["--keep", "--width", "--project"]),
])
def test_help_shows_the_commands_arguments(command: str, wanted: list[str], tmp_path: Path) -> None:
    text = run_memtree(command, "--help", cwd=tmp_path).stdout
    for word in wanted:
        assert word in text, f"{command} --help lacks {word}:\n{text}"


def test_demo_help_says_what_runs_without_project(tmp_path: Path) -> None:
    text = " ".join(run_memtree("demo", "--help", cwd=tmp_path).stdout.split())
    assert "bundled sample project" in text
    assert "default: the current one" not in text


def test_stop_works_for_a_project_whose_directory_is_gone(home: Path, tmp_path: Path) -> None:
    out = run_memtree("stop", "--project", str(tmp_path / "deleted-project"), cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "no daemon running" in out.stdout


def test_a_server_that_dies_fails_the_demo_in_one_line_and_keeps_its_store(home: Path, tmp_path: Path) -> None:
    """A real server process that exits at once (``false``): the session's ExceptionGroup becomes one line
    naming the daemon log, and the scratch store is kept for it."""
    import os
    import subprocess
    import sys

    script = ("import sys, memtree_plugins.commands.demo as demo\n"
              "demo.MEMTREE = 'false'\n"
              "from memtree_core.cli import main\n"
              "sys.exit(main(['demo']))\n")
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=120)
    err = assert_one_line_error(out, "the demo session failed", "daemon.log")
    log = Path(err.rsplit(" ", 1)[1])
    assert log.is_relative_to(tmp_path) and (log.parents[2] / "bookshop").is_dir()  # the scratch was kept


def test_stats_shows_values_the_read_tool_redacted(home: Path, project: Path) -> None:
    from memtree_core.app import App

    key = "AKIA" + "Q7RZ" + "T4XW" + "N2LB" + "K9PD"  # the shape of an access key id; no real key
    (project / "settings.py").write_text(f'AWS_ACCESS_KEY_ID = "{key}"\n')
    app = App.open(project)
    try:
        app.plugins.tools["read"].build(app)("settings.py")
        counted = app.store.counters("redaction:")
    finally:
        app.close()
    assert counted
    out = run_memtree("stats", "--project", str(project), cwd=project)
    assert out.returncode == 0, out.stderr
    section = out.stdout.split("redaction  (values redacted", 1)[1]
    for name, value in counted.items():
        assert re.search(rf"^\s+{re.escape(name.split(':', 1)[1])}\s+{value}$", section, re.M), section
    assert key not in out.stdout


@pytest.mark.parametrize("command", ["info", "stats"])  # a long output and a short one (flushed at exit)
def test_a_reader_that_leaves_early_is_not_an_error(tmp_path: Path, command: str) -> None:
    """`memtree info | head -1`: no BrokenPipeError traceback when the pipe's reader has gone (here it is
    gone before the command starts, so every write fails)."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    # Buffered stdout, as for any user (PYTHONUNBUFFERED would hide the flush at exit).
    env = {**{k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}, "MEMTREE_HOME": str(tmp_path / "home")}
    try:
        proc = subprocess.run([sys.executable, "-m", "memtree_core.cli", command, "--project", str(tmp_path)],
                              stdout=write_end, stderr=subprocess.PIPE, text=True, env=env, timeout=60)
    finally:
        os.close(write_end)
    assert "Traceback" not in proc.stderr and "BrokenPipe" not in proc.stderr, proc.stderr
    assert proc.returncode == 141


def test_search_goes_through_the_plugin_that_provides_it(home: Path, project: Path) -> None:
    """`memtree search` calls the registered search tool: with its plugin disabled, a clear one-line error."""
    ok = run_memtree("search", "anything", "--project", str(project), env={"MEMTREE_HOME": str(home)})
    assert ok.returncode == 0 and "0 hit(s)" in ok.stdout, ok.stderr
    off = run_memtree("search", "anything", "--project", str(project),
                      env={"MEMTREE_HOME": str(home), "MEMTREE_DISABLE_PLUGINS": "retrieval"})
    assert off.returncode == 2 and off.stdout == ""
    assert off.stderr.strip().splitlines() == [
        "memtree search: no plugin provides the search tool (is the 'retrieval' plugin disabled? "
        "see memtree plugins)"]


# -- fast paths: no pydantic -------------------------------------------------------------------------------
def imported(*argv: str, cwd: Path, input: str = "") -> tuple[subprocess.CompletedProcess[str], set[str]]:
    """Run ``memtree`` under ``-X importtime``; its result and the top-level packages it imported."""
    out = subprocess.run([sys.executable, "-X", "importtime", MEMTREE, *argv], cwd=cwd,
                         input=input, capture_output=True, text=True, timeout=60)
    names = {line.rsplit("|", 1)[1].strip().split(".")[0] for line in out.stderr.splitlines()
             if line.startswith("import time:") and "|" in line}
    return out, names


def test_the_command_table_is_what_the_commands_say() -> None:
    """``memtree --help`` lists the commands, and a command's ``--help`` shows its arguments, from
    memtree_core/commands/table.json: it must hold what the plugins register and each module adds."""
    from helpers.command_table import TABLE, render, table

    assert TABLE.read_text(encoding="utf-8") == render(table()), (
        "memtree_core/commands/table.json is out of date: python tests/helpers/command_table.py --write")


@pytest.mark.parametrize("width", [44, 100])
def test_each_commands_help_from_the_table_is_its_own(width: int, monkeypatch: pytest.MonkeyPatch,
                                                     home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Every command's ``--help`` as the table gives it is byte for byte what its module gives."""
    from memtree_core import cli

    monkeypatch.setenv("COLUMNS", str(width))

    def help_of(command: str) -> str:
        with pytest.raises(SystemExit) as exit_:
            cli.main([command, "--help"])
        assert exit_.value.code == 0
        return capsys.readouterr().out

    for command in COMMANDS:
        from_table = help_of(command)
        with monkeypatch.context() as m:
            m.setattr(cli, "command_table", lambda part="commands": {})  # each command's module then gives its own help
            assert from_table == help_of(command), command


def test_help_the_table_cannot_give_comes_from_the_command(monkeypatch: pytest.MonkeyPatch, home: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    """When argparse goes on past ``--help`` with the table's description (an argument that swallows the rest),
    the command's own parser decides."""
    from memtree_core import cli

    table = {name: dict(entry) for name, entry in cli.command_table().items()}
    table["stop"]["arguments"] = [[["rest"], {"nargs": "..."}]]
    monkeypatch.setattr(cli, "command_table", lambda part="commands": table if part == "commands" else {})
    with pytest.raises(SystemExit) as exit_:
        cli.main(["stop", "extra", "--help"])
    assert exit_.value.code == 0 and capsys.readouterr().out.startswith("usage: memtree stop")


def test_arguments_the_table_cannot_hold_leave_the_help_to_the_command(monkeypatch: pytest.MonkeyPatch, home: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """Argument groups or a custom action are not described (None): that command's ``--help`` imports it."""
    import argparse
    from types import SimpleNamespace

    from helpers.command_table import arguments

    from memtree_core import cli

    class Count(argparse.Action):
        def __call__(self, *args: object) -> None: ...

    plain = SimpleNamespace(add_arguments=lambda p: p.add_argument("--n", type=int, default=3, help="n"))
    assert arguments("x", plain) == [[["--n"], {"default": 3, "help": "n"}]]
    grouped = SimpleNamespace(add_arguments=lambda p: p.add_argument_group("g").add_argument("--n", help="n"))
    custom = SimpleNamespace(add_arguments=lambda p: p.add_argument("--n", action=Count, help="n"))
    assert arguments("x", grouped) is None and arguments("x", custom) is None
    table = {name: dict(entry) for name, entry in cli.command_table().items()}
    table["stop"]["arguments"] = None
    monkeypatch.setattr(cli, "command_table", lambda part="commands": table if part == "commands" else {})
    monkeypatch.delitem(sys.modules, "memtree_core.daemon.commands.stop", raising=False)
    with pytest.raises(SystemExit) as exit_:
        cli.main(["stop", "--help"])
    assert exit_.value.code == 0 and "--force" in capsys.readouterr().out
    assert "memtree_core.daemon.commands.stop" in sys.modules


@pytest.mark.parametrize("argv", [["--help"], *([c, "--help"] for c in sorted(COMMANDS))])
def test_help_imports_no_pydantic(argv: list[str], home: Path, tmp_path: Path) -> None:
    out, names = imported(*argv, cwd=tmp_path)
    assert out.returncode == 0 and out.stdout.startswith("usage: memtree"), out.stderr[-2000:]
    assert not names & {"pydantic", "pydantic_settings", "pydantic_core"}, sorted(names)


def modules_imported(*argv: str, cwd: Path) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    """Run ``python -X importtime *argv``; its result and every module it imported."""
    out = subprocess.run([sys.executable, "-X", "importtime", *argv], cwd=cwd, capture_output=True, text=True,
                         timeout=60)
    return out, {line.rsplit("|", 1)[1].strip() for line in out.stderr.splitlines()
                 if line.startswith("import time:") and "|" in line}


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_commands_help_imports_none_of_its_code(command: str, home: Path, tmp_path: Path) -> None:
    """With only the built-in plugins, ``memtree COMMAND --help`` comes from the table: no plugin, no pluggy,
    not the command's own module, not typing (beyond what Python's own start imports here)."""
    out, modules = modules_imported(MEMTREE, command, "--help", cwd=tmp_path)
    assert out.returncode == 0 and out.stdout.startswith(f"usage: memtree {command}"), out.stderr[-2000:]
    modules -= modules_imported("-c", "pass", cwd=tmp_path)[1]
    assert not {m for m in modules if m.split(".")[0] in ("pluggy", "memtree_plugins", "typing")}, sorted(modules)
    assert not {m for m in modules if m.startswith(("memtree_core.daemon", "memtree_core.commands."))}, sorted(modules)


def test_help_reads_no_distribution_metadata(home: Path, tmp_path: Path) -> None:
    """With no third-party plugin installed, ``--help`` finds that out without importlib.metadata (which
    costs more than the rest of it)."""
    out = subprocess.run([sys.executable, "-X", "importtime", MEMTREE, "--help"], cwd=tmp_path,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and "importlib.metadata" not in out.stderr


def test_serve_imports_no_pydantic(home: Path, project: Path) -> None:
    hello = ('{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26",'
             '"capabilities":{},"clientInfo":{"name":"t","version":"1"}}}\n')
    try:
        out, names = imported("serve", "--project", str(project), cwd=project, input=hello)
    finally:
        run_memtree("stop", "--project", str(project))
    assert out.returncode == 0 and '"id":1' in out.stdout and '"result"' in out.stdout, out.stderr[-2000:]
    assert not names & {"pydantic", "pydantic_settings", "pydantic_core", "pluggy"}, sorted(names)


@pytest.mark.parametrize("argv", [["--help"], ["search", "--help"], ["serve", "-h"], ["digest", "--help"]])
def test_at_80_columns_help_is_the_tables_text_and_argparse_is_not_even_imported(
        argv: list[str], home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The table holds each --help as argparse prints it at 80 columns (the table test proves the text is
    argparse's); at 80 columns it is printed from there, at any other width argparse renders it."""
    monkeypatch.setenv("COLUMNS", "80")
    narrow, names = imported(*argv, cwd=tmp_path)
    assert narrow.returncode == 0 and "argparse" not in names, sorted(names)
    from memtree_core import cli

    key = argv[0] if len(argv) == 2 else ""
    assert narrow.stdout == cli.command_table("rendered")["help"][key]
    monkeypatch.setenv("COLUMNS", "132")
    wide, names = imported(*argv, cwd=tmp_path)
    assert wide.returncode == 0 and "argparse" in names
    assert wide.stdout.split() == narrow.stdout.split()  # the same words, wrapped for its width
