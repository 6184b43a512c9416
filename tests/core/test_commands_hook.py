"""``memtree_register_commands``: the built-in commands come through it, and a third-party plugin installed as
a real entry-point distribution adds its own; the host's commands start without loading any plugin."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from helpers.common import MEMTREE, commands
from helpers.plugin_dists import RAISES_AT_IMPORT, env_with, make_dist

from memtree_core.cli import HOST_COMMANDS
from memtree_core.plugins import build
from memtree_core.settings import Settings

HELLO = '''
from memtree_core.command import Command
from memtree_core.hookspecs import hookimpl

EXAMPLE = "memtree hello --name Ada"


def add_arguments(parser):
    parser.add_argument("--name", required=True, help="who to greet")


def run(args):
    print(f"hello {args.name} from {args.project or 'here'}")
    return 3


@hookimpl
def memtree_register_commands(register):
    register(Command("hello", "greet someone (a third-party command)", __name__))
'''

TAKES_SERVE = '''
from memtree_core.command import Command
from memtree_core.hookspecs import hookimpl


class Serve:
    def add_arguments(self, parser):
        pass

    def run(self, args):
        print("not the real serve")


@hookimpl
def memtree_register_commands(register):
    register(Command("serve", "a plugin's serve", Serve()))
'''


def memtree(*args: str, env: dict[str, str], cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([MEMTREE, *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=60)


@pytest.fixture
def hello_site(tmp_path: Path) -> Path:
    site = tmp_path / "site"
    make_dist(site, "memtree-hello", "0.3.0", {"hello": HELLO})
    return site


def test_every_builtin_command_is_registered_through_the_hook() -> None:
    plugins = build(Settings(), {"MEMTREE_LOAD_PLUGINS": ""}, kinds=("commands",))
    registered = {e.name: e.plugin for e in plugins.commands.entries()}
    # a command about one plugin's behaviour comes with that plugin
    assert set(registered.values()) == {"capture", "commands", "inspector", "semantic", "walkers", "redaction", "notes"}
    assert (registered["ui"], registered["reembed"], registered["import"], registered["setup"],
            registered["redact"]) == ("inspector", "semantic", "walkers", "capture", "redaction")
    assert set(registered) | set(HOST_COMMANDS) == set(commands({"MEMTREE_LOAD_PLUGINS": ""}))
    assert not set(registered) & set(HOST_COMMANDS)
    assert plugins.token_counter is None  # only the commands were asked for


def test_a_third_party_command_runs_with_its_own_help(home: Path, hello_site: Path, tmp_path: Path) -> None:
    env = env_with(hello_site, MEMTREE_HOME=str(home))
    listed = memtree("--help", env=env)
    assert listed.returncode == 0 and "greet someone (a third-party command)" in listed.stdout, listed.stderr
    helped = memtree("hello", "--help", env=env)
    assert helped.returncode == 0
    assert helped.stdout.startswith("usage: memtree hello") and "--name" in helped.stdout
    assert "example:\n  memtree hello --name Ada" in helped.stdout
    ran = memtree("hello", "--name", "Ada", "--project", str(tmp_path), env=env)
    assert (ran.returncode, ran.stdout) == (3, f"hello Ada from {tmp_path}\n"), ran.stderr
    missing = memtree("hello", env=env)
    assert missing.returncode == 2 and len(missing.stderr.strip().splitlines()) == 1
    assert "--name" in missing.stderr and "memtree hello --help" in missing.stderr


def test_a_disabled_plugin_adds_no_command(home: Path, hello_site: Path) -> None:
    env = env_with(hello_site, MEMTREE_HOME=str(home), MEMTREE_DISABLE_PLUGINS="hello")
    out = memtree("hello", "--name", "Ada", env=env)
    assert out.returncode == 2 and "invalid choice: 'hello'" in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1


def test_the_users_config_decides_but_a_repository_does_not(home: Path, hello_site: Path, project: Path) -> None:
    env = env_with(hello_site, MEMTREE_HOME=str(home))
    (project / ".memtree.json").write_text('{"plugins": {"disable": ["hello"]}}')
    assert memtree("hello", "--name", "x", "--project", str(project), env=env, cwd=project).returncode == 3
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.json").write_text('{"plugins": {"disable": ["hello"]}}')
    assert "invalid choice: 'hello'" in memtree("hello", "--name", "x", env=env).stderr


def test_the_builtin_commands_go_with_their_plugin(home: Path, project: Path) -> None:
    env = env_with(project, MEMTREE_HOME=str(home), MEMTREE_DISABLE_PLUGINS="commands")
    out = memtree("info", "--project", str(project), env=env)
    assert out.returncode == 2 and "invalid choice: 'info'" in out.stderr
    assert memtree("plugins", "--project", str(project), env=env).returncode == 0  # the host's own


def test_a_plugin_cannot_take_a_host_command(home: Path, tmp_path: Path, project: Path) -> None:
    site = tmp_path / "site"
    make_dist(site, "memtree-takeserve", "0.1.0", {"takeserve": TAKES_SERVE})
    env = env_with(site, MEMTREE_HOME=str(home))
    out = memtree("--help", env=env)
    assert "the command 'serve' from plugin 'takeserve' is ignored" in out.stderr
    assert memtree("serve", "--help", env=env).stdout.startswith("usage: memtree serve [-h] [--project DIR]")


def test_host_commands_are_dispatched_before_any_plugin_loads(home: Path, tmp_path: Path, project: Path) -> None:
    """Under MEMTREE_STRICT_PLUGINS=1 a plugin that fails at import is fatal to whatever loads plugins:
    ``serve`` and ``stop`` never do; a plugin's command does, with one line."""
    site = tmp_path / "site"
    make_dist(site, "memtree-broken", "0.1.0", {"broken": RAISES_AT_IMPORT})
    env = env_with(site, MEMTREE_HOME=str(home), MEMTREE_STRICT_PLUGINS="1")
    assert memtree("serve", "--help", env=env).returncode == 0
    stopped = memtree("stop", "--project", str(project), env=env)
    assert stopped.returncode == 0 and "no daemon running" in stopped.stdout, stopped.stderr
    info = memtree("info", "--project", str(project), env=env)
    assert info.returncode == 2 and "Traceback" not in info.stderr
    assert len(info.stderr.strip().splitlines()) == 1 and "'broken'" in info.stderr, info.stderr


@pytest.mark.parametrize("argv", [["serve", "--help"], ["--version"]])
def test_serve_imports_no_plugin_machinery(tmp_path: Path, argv: list[str]) -> None:
    code = ("import sys\nfrom memtree_core.cli import main\n"
            f"try:\n    main({argv!r})\nexcept SystemExit:\n    pass\n"
            "heavy = sorted(m for m in sys.modules if m.split('.')[0] in "
            "('pluggy', 'mcp', 'pydantic', 'memtree_plugins', 'importlib_metadata'))\n"
            "print(heavy, file=sys.stderr)\n")
    out = subprocess.run([str(Path(MEMTREE).parent / "python"), "-c", code], capture_output=True, text=True,
                         timeout=60, cwd=tmp_path)
    assert out.stderr.strip() == "[]", out.stderr
