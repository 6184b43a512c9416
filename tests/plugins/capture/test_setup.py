"""``memtree setup claude-code``: the installed command run as a real subprocess against a temporary home,
``$CLAUDE_CONFIG_DIR`` and project; the files it writes checked against Claude Code's documented settings, hooks
and MCP schemas (tests/helpers/claude_code.py); merging, idempotence, uninstall and refusal of bad files; then
the written server and hook commands run for real, as Claude Code runs them, and the capture reaches the store
of a real daemon, which ``memtree doctor`` then reports."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from helpers.claude_code import hooks_problems, mcp_problems
from helpers.common import MEMTREE, REPO, wait_for
from helpers.daemon import open_store, run_async
from helpers.hook import FIXTURES

import memtree_plugins
from memtree_plugins.lib import hook_sender

PACKAGE = Path(memtree_plugins.__file__).parent
PLUGIN_HOOKS = json.loads((REPO / "plugin" / "hooks" / "hooks.json").read_text())["hooks"]


@pytest.fixture
def claude_env(tmp_path: Path) -> dict[str, str]:
    """The environment of a user whose home is empty: no Claude Code settings, no $CLAUDE_CONFIG_DIR."""
    home = tmp_path / "user-home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("CLAUDE_")}
    env["HOME"] = str(home)
    return env


def setup(*args: str, env: dict[str, str], cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([MEMTREE, "setup", "claude-code", *args], env=env, cwd=cwd, capture_output=True,
                          text=True, timeout=60)


def load(path: Path) -> Any:
    return json.loads(path.read_text())


def snapshot(*paths: Path) -> dict[Path, bytes | None]:
    return {p: p.read_bytes() if p.exists() else None for p in paths}


MARK = " # added by memtree setup claude-code"


def script_of(command: str) -> Path:
    """The script a written command runs: ``/bin/sh <script> [args] # added by memtree setup claude-code``; the
    digest's arguments are this install's memtree."""
    import shlex

    assert command.startswith("/bin/sh ") and command.endswith(MARK), command
    sh, script, *args = shlex.split(command.removesuffix(MARK))
    assert args == ([MEMTREE] if Path(script).name == "digest" else []), command
    return Path(script)


def assert_ours(mcp: dict[str, Any], settings: dict[str, Any]) -> None:
    """The documented shapes, this install's command and scripts, and the plugin's events and matchers."""
    assert mcp_problems(mcp) == [] and hooks_problems(settings) == [], (mcp_problems(mcp), hooks_problems(settings))
    assert mcp["mcpServers"]["memtree"] == {"type": "stdio", "command": MEMTREE, "args": ["serve"], "env": {}}
    ours = {event: [g for g in groups if any("claude-code-hooks" in h["command"] for h in g["hooks"])]
            for event, groups in settings["hooks"].items()}
    ours = {event: groups for event, groups in ours.items() if groups}
    assert set(ours) == set(PLUGIN_HOOKS) == {"PostToolUse", "PostToolUseFailure", "SessionStart"}
    for event, groups in PLUGIN_HOOKS.items():
        assert len(ours[event]) == len(groups)
        for mine, plugin in zip(ours[event], groups, strict=True):
            assert mine["matcher"] == plugin["matcher"]
            for h, p in zip(mine["hooks"], plugin["hooks"], strict=True):
                assert {k: v for k, v in h.items() if k != "command"} == {k: v for k, v in p.items()
                                                                         if k != "command"}
                script = script_of(h["command"])
                # the installed copy, which is the plugin's own file (one copy)
                assert script.parent == PACKAGE / "capture" / "claude-code-hooks", script
                assert script.name == p["command"].rsplit("/", 1)[1]
                assert script.read_bytes() == (REPO / "plugin" / "hooks" / script.name).read_bytes()


SKILL_MARK = "<!-- added by memtree setup claude-code -->"


def assert_skill(claude_dir: Path) -> None:
    """The using-memtree skill where Claude Code looks for skills, as the plugin ships it, with setup's mark."""
    written = (claude_dir / "skills" / "using-memtree" / "SKILL.md").read_text()
    shipped = (REPO / "skills" / "using-memtree" / "SKILL.md").read_text()
    assert written == f"{shipped.rstrip()}\n\n{SKILL_MARK}\n"
    assert written.startswith("---\nname: using-memtree\ndescription: ")  # the frontmatter Claude Code reads


# -- what is written where -----------------------------------------------------------------------------------
def test_project_setup_writes_the_documented_server_and_hooks(claude_env: dict[str, str], tmp_path: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    r = setup("--project", str(project), env=claude_env)
    assert r.returncode == 0, r.stderr
    assert_ours(load(project / ".mcp.json"), load(project / ".claude" / "settings.json"))
    assert_skill(project / ".claude")
    assert sorted(p.name for p in project.rglob("*")) == [".claude", ".mcp.json", "SKILL.md", "settings.json",
                                                          "skills", "using-memtree"]
    assert not any(Path(claude_env["HOME"]).iterdir())  # the user's settings are not touched
    assert "Restart Claude Code" in r.stdout


@pytest.mark.parametrize("config_dir", [False, True], ids=["home", "CLAUDE_CONFIG_DIR"])
def test_user_setup_writes_the_user_files(claude_env: dict[str, str], tmp_path: Path, config_dir: bool) -> None:
    home = Path(claude_env["HOME"])
    if config_dir:
        claude_env["CLAUDE_CONFIG_DIR"] = str(tmp_path / "cc-config")
        state, settings = tmp_path / "cc-config" / ".claude.json", tmp_path / "cc-config" / "settings.json"
    else:
        state, settings = home / ".claude.json", home / ".claude" / "settings.json"
    cwd = tmp_path / "somewhere"
    cwd.mkdir()
    r = setup("--user", env=claude_env, cwd=cwd)
    assert r.returncode == 0, r.stderr
    assert_ours(load(state), load(settings))
    assert_skill(settings.parent)
    assert not any(cwd.iterdir())
    assert state.stat().st_mode & 0o077 == 0  # Claude Code's own state file: private when setup creates it


def test_running_twice_writes_the_same_thing_once(claude_env: dict[str, str], tmp_path: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    files = (project / ".mcp.json", project / ".claude" / "settings.json",
             project / ".claude" / "skills" / "using-memtree" / "SKILL.md")
    assert setup("--project", str(project), env=claude_env).returncode == 0
    first = snapshot(*files)
    stamps = [f.stat().st_mtime_ns for f in files]
    again = setup("--project", str(project), env=claude_env)
    assert again.returncode == 0 and again.stdout.count("already set up") == 3, again.stdout
    assert snapshot(*files) == first and [f.stat().st_mtime_ns for f in files] == stamps


# -- merging and uninstalling --------------------------------------------------------------------------------
USER_STATE = {"numStartups": 12, "oauthAccount": {"emailAddress": "dev@example.com"},
              "projects": {"/src/app": {"allowedTools": [], "mcpServers": {"local-db": {"command": "pg-mcp"}}}},
              "mcpServers": {"github": {"type": "stdio", "command": "npx", "args": ["-y", "gh-mcp"],
                                        "env": {"GITHUB_TOKEN": "x"}},
                             "docs": {"type": "http", "url": "https://example.com/mcp"}}}
USER_SETTINGS = {"model": "opus", "permissions": {"allow": ["Bash(npm run test:*)"], "deny": ["Read(./.env)"]},
                 "env": {"FOO": "bar"},
                 "hooks": {"PostToolUse": [{"matcher": "Edit|Write",
                                            "hooks": [{"type": "command", "command": "npx prettier --write"}]},
                                           {"matcher": "Bash", "hooks": [{"type": "command", "command": "log.sh"}]}],
                           "Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}]}}


def test_setup_keeps_everything_else_and_uninstall_restores_the_files_byte_for_byte(
        claude_env: dict[str, str], tmp_path: Path) -> None:
    config = tmp_path / "cc-config"
    config.mkdir()
    claude_env["CLAUDE_CONFIG_DIR"] = str(config)
    state, settings = config / ".claude.json", config / "settings.json"
    state.write_text(json.dumps(USER_STATE, indent=2) + "\n")
    settings.write_text(json.dumps(USER_SETTINGS, indent=4) + "\n")  # an indentation of the user's own
    original = snapshot(state, settings)

    assert setup("--user", env=claude_env).returncode == 0
    new_state, new_settings = load(state), load(settings)
    assert_ours(new_state, new_settings)
    assert {k: v for k, v in new_state.items() if k != "mcpServers"} == {k: v for k, v in USER_STATE.items()
                                                                           if k != "mcpServers"}
    assert list(new_state["mcpServers"].items())[:2] == list(USER_STATE["mcpServers"].items())
    assert {k: v for k, v in new_settings.items() if k != "hooks"} == {k: v for k, v in USER_SETTINGS.items()
                                                                         if k != "hooks"}
    assert new_settings["hooks"]["Stop"] == USER_SETTINGS["hooks"]["Stop"]
    assert new_settings["hooks"]["PostToolUse"][:2] == USER_SETTINGS["hooks"]["PostToolUse"]  # theirs first
    assert settings.read_text().startswith('{\n    "model"')  # still their indentation

    assert setup("--user", env=claude_env).returncode == 0  # idempotent on a merged file too
    out = setup("--user", "--uninstall", env=claude_env)
    assert out.returncode == 0, out.stderr
    assert snapshot(state, settings) == original


def test_an_install_elsewhere_replaces_the_entries_of_the_previous_one(claude_env: dict[str, str],
                                                                        tmp_path: Path) -> None:
    project = tmp_path / "proj"
    (project / ".claude").mkdir(parents=True)
    old = "/opt/old-venv/lib/python3.11/site-packages/memtree_plugins/capture/claude-code-hooks"
    (project / ".mcp.json").write_text(json.dumps({"mcpServers": {"memtree": {
        "type": "stdio", "command": "/opt/old-venv/bin/memtree", "args": ["serve"], "env": {}}}}))
    (project / ".claude" / "settings.json").write_text(json.dumps({"hooks": {"PostToolUse": [
        {"matcher": "Read|Grep|Bash", "hooks": [{"type": "command", "command": f"/bin/sh {old}/capture{MARK}",
                                                 "async": True, "timeout": 10}]},
        {"matcher": "Bash", "hooks": [{"type": "command", "command": "mine.sh"},
                                      {"type": "command", "command": f"/bin/sh {old}/replace{MARK}",
                                       "timeout": 5}]}]}}))
    assert setup("--project", str(project), env=claude_env).returncode == 0
    settings = load(project / ".claude" / "settings.json")
    assert_ours(load(project / ".mcp.json"), settings)
    assert old not in json.dumps(settings)
    assert settings["hooks"]["PostToolUse"][0] == {"matcher": "Bash",
                                                   "hooks": [{"type": "command", "command": "mine.sh"}]}


def test_a_hook_of_the_users_own_running_the_same_script_is_kept(claude_env: dict[str, str],
                                                                 tmp_path: Path) -> None:
    """The example plugin's README has users send WebFetch calls to the capture script with a hook of their
    own: neither setup nor --uninstall touches it, though it runs the very script setup points at."""
    project = tmp_path / "proj"
    (project / ".claude").mkdir(parents=True)
    mine = {"matcher": "WebFetch", "hooks": [{"type": "command", "async": True, "timeout": 10,
            "command": f"/bin/sh {PACKAGE / 'capture' / 'claude-code-hooks' / 'capture'}"}]}
    (project / ".claude" / "settings.json").write_text(json.dumps({"hooks": {"PostToolUse": [mine]}}))
    before = snapshot(project / ".claude" / "settings.json")
    assert setup("--project", str(project), env=claude_env).returncode == 0
    settings = load(project / ".claude" / "settings.json")
    assert settings["hooks"]["PostToolUse"][0] == mine and len(settings["hooks"]["PostToolUse"]) == 3
    assert setup("--project", str(project), "--uninstall", env=claude_env).returncode == 0
    assert snapshot(project / ".claude" / "settings.json") == before


def test_uninstall_with_nothing_installed_changes_nothing(claude_env: dict[str, str], tmp_path: Path) -> None:
    project = tmp_path / "proj"
    (project / ".claude").mkdir(parents=True)
    (project / ".claude" / "settings.json").write_text(json.dumps(USER_SETTINGS))
    before = snapshot(project / ".mcp.json", project / ".claude" / "settings.json")
    r = setup("--project", str(project), "--uninstall", env=claude_env)
    assert r.returncode == 0 and r.stdout.count("unchanged") == 3, r.stdout
    assert snapshot(project / ".mcp.json", project / ".claude" / "settings.json") == before


def test_uninstall_deletes_a_file_that_held_only_memtrees_entries(claude_env: dict[str, str],
                                                                  tmp_path: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    assert setup("--project", str(project), env=claude_env).returncode == 0
    assert setup("--project", str(project), "--uninstall", env=claude_env).returncode == 0
    assert not any(project.iterdir())


def test_a_skill_of_that_name_setup_did_not_write_is_left_alone(claude_env: dict[str, str], tmp_path: Path) -> None:
    project = tmp_path / "proj"
    mine = project / ".claude" / "skills" / "using-memtree" / "SKILL.md"
    mine.parent.mkdir(parents=True)
    mine.write_text("---\nname: using-memtree\ndescription: my own notes\n---\nmine\n")
    before = mine.read_bytes()
    for args in ((), ("--uninstall",)):
        r = setup("--project", str(project), *args, env=claude_env)
        assert r.returncode == 0 and "a using-memtree skill setup did not write" in r.stdout, r.stdout
        assert mine.read_bytes() == before
    assert (project / ".claude" / "settings.json").exists() is False  # the rest was installed, then removed


def test_an_older_skill_setup_wrote_is_brought_up_to_date(claude_env: dict[str, str], tmp_path: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    assert setup("--project", str(project), env=claude_env).returncode == 0
    skill = project / ".claude" / "skills" / "using-memtree" / "SKILL.md"
    skill.write_text(f"---\nname: using-memtree\ndescription: an older text\n---\n\n{SKILL_MARK}\n")
    r = setup("--project", str(project), env=claude_env)
    assert r.returncode == 0 and "wrote the using-memtree skill" in r.stdout, r.stdout
    assert_skill(project / ".claude")


# -- refusals ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("name", "text", "said"), [
    (".mcp.json", '{"mcpServers": {"a": {"command": "x"},}}', "not valid JSON"),
    (".claude/settings.json", "{\n  // my settings\n}\n", "not valid JSON"),
    (".claude/settings.json", "[1, 2]", "holds a JSON list"),
    (".claude/settings.json", '{"hooks": [1]}', '"hooks" is not an object'),
    (".claude/settings.json", '{"hooks": {"PostToolUse": {"matcher": "Bash"}}}', "hooks.PostToolUse is not a list"),
    (".mcp.json", '{"mcpServers": ["memtree"]}', '"mcpServers" is not an object'),
    (".mcp.json", '{"mcpServers": {"memtree": {"command": "docker", "args": ["run", "x"]}}}',
     "MCP server named 'memtree' that setup did not write"),
])
@pytest.mark.parametrize("uninstall", [False, True], ids=["setup", "uninstall"])
def test_a_file_claude_code_could_not_use_is_refused_and_nothing_is_written(
        claude_env: dict[str, str], tmp_path: Path, name: str, text: str, said: str, uninstall: bool) -> None:
    project = tmp_path / "proj"
    (project / ".claude").mkdir(parents=True)
    (project / name).write_text(text)
    files = (project / ".mcp.json", project / ".claude" / "settings.json")
    before = snapshot(*files)
    r = setup("--project", str(project), *(["--uninstall"] if uninstall else []), env=claude_env)
    if uninstall and "did not write" in said:  # not memtree's: uninstall leaves it alone
        assert r.returncode == 0 and snapshot(*files) == before
        return
    assert r.returncode == 2, (r.stdout, r.stderr)
    (line,) = r.stderr.splitlines()
    assert line.startswith("memtree setup: ") and str(project / name) in line and said in line, line
    assert "nothing was changed" in line and "Traceback" not in r.stderr
    assert snapshot(*files) == before


def test_user_and_project_together_is_one_line(claude_env: dict[str, str], tmp_path: Path) -> None:
    r = setup("--user", "--project", str(tmp_path), env=claude_env)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "give one of them" in r.stderr, r.stderr
    assert not any(Path(claude_env["HOME"]).iterdir())


def test_the_sender_the_daemon_compiles_is_the_installed_copy() -> None:
    """An install from the wheel has no plugin/ tree beside its packages: the python sender must be found in
    the package (the capture plugin's claude-code-hooks), or the daemon precompiles nothing."""
    assert hook_sender.SEND_PY.is_relative_to(PACKAGE) and hook_sender.SEND_PY.is_file()
    assert hook_sender.SEND_PY.read_bytes() == (REPO / "plugin" / "hooks" / "send.py").read_bytes()


# -- the written commands, run for real ----------------------------------------------------------------------
def run_written_hook(command: str, payload: dict[str, Any], project: Path,
                     env: dict[str, str]) -> subprocess.CompletedProcess[bytes]:
    """A hook command from the settings file, as Claude Code runs it: a shell, the payload on stdin."""
    return subprocess.run(["/bin/sh", "-c", command], input=json.dumps(payload).encode(), capture_output=True,
                          env={**env, "CLAUDE_PROJECT_DIR": str(project)}, cwd=project, timeout=30)


@pytest.mark.usefixtures("home")
def test_the_written_server_and_hooks_capture_into_a_real_daemon_and_doctor_says_so(
        claude_env: dict[str, str], project: Path, backend: str, daemon_guard: list[int]) -> None:
    """On either store: doctor reads the last capture from the store in effect (a server's too)."""
    env = {**claude_env, **{k: v for k, v in os.environ.items() if k.startswith("MEMTREE_")}}
    before = subprocess.run([MEMTREE, "doctor", "--project", str(project)], env=env, capture_output=True,
                            text=True, timeout=60)
    assert "capture: NOT wired" in before.stdout and "memtree setup claude-code" in before.stdout, before.stdout

    assert setup("--project", str(project), env=env).returncode == 0
    server = load(project / ".mcp.json")["mcpServers"]["memtree"]
    hooks = load(project / ".claude" / "settings.json")["hooks"]
    (capture,) = [h["command"] for g in hooks["PostToolUse"] for h in g["hooks"] if h.get("async")]
    (replace,) = [h["command"] for g in hooks["PostToolUse"] for h in g["hooks"] if not h.get("async")]
    payload = {**json.loads((FIXTURES / "post-bash.json").read_text()), "cwd": str(project),
               "tool_use_id": "toolu_setup_e2e"}

    async def session() -> None:
        from mcp.client.session import ClientSession
        from mcp.client.stdio import StdioServerParameters, stdio_client

        # as Claude Code starts a stdio server: the entry's command and args, in the session's directory,
        # with $CLAUDE_PROJECT_DIR set
        params = StdioServerParameters(command=server["command"], args=server["args"],
                                       env={**env, **server["env"], "CLAUDE_PROJECT_DIR": str(project)},
                                       cwd=str(project))
        with open(os.devnull, "w") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as s:
                await s.initialize()
                assert "read" in {t.name for t in (await s.list_tools()).tools}
                r = run_written_hook(capture, payload, project, env)
                assert (r.returncode, r.stdout) == (0, b""), r
                conn = open_store(project)
                try:
                    rows = wait_for(lambda: conn.execute(
                        "SELECT content FROM nodes WHERE json_extract(metadata, '$.tool_use_id') = ?",
                        ("toolu_setup_e2e",)).fetchall(), 30, "the capture in the store")
                finally:
                    conn.close()
                assert payload["tool_response"]["stdout"].strip() in rows[0][0]
                # the shrinking hook: capture.replace is off, so it prints nothing and exits 0
                r = run_written_hook(replace, payload, project, env)
                assert (r.returncode, r.stdout) == (0, b""), r

    run_async(session)
    assert subprocess.run([MEMTREE, "stop", "--project", str(project)], env=env, capture_output=True,
                          timeout=60).returncode == 0
    after = subprocess.run([MEMTREE, "doctor", "--project", str(project)], env=env, capture_output=True,
                           text=True, timeout=60)
    assert after.returncode == 0, after.stderr
    assert f"capture: wired (hooks in {project / '.claude' / 'settings.json'})" in after.stdout, after.stdout
    (last,) = [line for line in after.stdout.splitlines() if line.startswith("last capture: ")]
    assert " ago)" in last and "accepted: Bash 1" in last, last
    assert "output shrinking" not in after.stdout  # both hooks are there


def test_doctor_finds_the_plugin_and_says_when_a_settings_file_is_unreadable(
        claude_env: dict[str, str], project: Path, home: Path) -> None:
    env = {**claude_env, **{k: v for k, v in os.environ.items() if k.startswith("MEMTREE_")}}
    user = Path(claude_env["HOME"]) / ".claude"
    user.mkdir()
    (user / "settings.json").write_text(json.dumps({"enabledPlugins": {"memtree@memtree": True}}))
    (project / ".claude").mkdir()
    (project / ".claude" / "settings.local.json").write_text("{oops")
    out = subprocess.run([MEMTREE, "doctor", "--project", str(project)], env=env, capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    assert f"capture: wired (the memtree plugin (memtree@memtree, enabled in {user / 'settings.json'}))" \
        in out.stdout, out.stdout
    assert "settings.local.json is not valid JSON" in out.stdout
    assert "last capture: none (no store yet)" in out.stdout


# -- Claude Code itself reads what was written -----------------------------------------------------------------
def claude(*args: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """The pinned Claude Code (package.json) offline: no API key, the test's own HOME."""
    from helpers.npm_tools import npm_tool

    environ = {k: v for k, v in env.items() if not k.startswith("ANTHROPIC_")}
    return subprocess.run([*npm_tool("@anthropic-ai/claude-code", "claude"), *args], env=environ, cwd=cwd,
                          capture_output=True, text=True, timeout=300)


def test_claude_codes_own_validator_accepts_the_written_hooks_and_server(claude_env: dict[str, str],
                                                                          tmp_path: Path) -> None:
    """`claude plugin validate` checks hooks files and .mcp.json with Claude Code's own schemas (it warns
    that an entry would be ignored at runtime, errs when a server would be dropped): the written ones, put in a
    scratch plugin, pass with nothing to say."""
    project = tmp_path / "proj"
    project.mkdir()
    assert setup("--project", str(project), env=claude_env).returncode == 0
    hooks = load(project / ".claude" / "settings.json")["hooks"]
    plugin = tmp_path / "check-plugin"
    (plugin / ".claude-plugin").mkdir(parents=True)
    (plugin / ".claude-plugin" / "plugin.json").write_text(json.dumps({
        "name": "setup-check", "version": "1.0.0", "description": "the files memtree setup wrote",
        "author": {"name": "test"}, "hooks": "./hooks.json", "mcpServers": "./.mcp.json"}))
    (plugin / "hooks.json").write_text(json.dumps({"hooks": hooks}))
    (plugin / ".mcp.json").write_bytes((project / ".mcp.json").read_bytes())
    r = claude("plugin", "validate", "--json", str(plugin), env=claude_env, cwd=tmp_path)
    report = json.loads(r.stdout)
    assert r.returncode == 0 and report["success"] is True, r.stdout
    files = [report["manifest"], *report["contents"]]
    assert [m for f in files for m in f["errors"] + f["warnings"]] == [], r.stdout
    assert {(h["event"], h["matcher"], h["type"], h["command"]) for h in report["provides"]["hooks"]} == {
        (event, g["matcher"], h["type"], h["command"]) for event, groups in hooks.items() for g in groups
        for h in g["hooks"]}
    assert report["provides"]["mcpServers"] == [{"name": "memtree", "type": "stdio", "target": MEMTREE,
                                                 "args": ["serve"]}]


@pytest.mark.parametrize("scope", ["project", "user"])
def test_claude_code_finds_the_server_in_each_scope(claude_env: dict[str, str], project: Path, home: Path,
                                                    daemon_guard: list[int], scope: str) -> None:
    """`claude mcp get` reads .mcp.json (project scope, waiting for the user's approval) and ~/.claude.json
    (user scope, which it starts and connects to: a real MCP handshake with this install's memtree serve)."""
    env = {**claude_env, **{k: v for k, v in os.environ.items() if k.startswith("MEMTREE_")}}
    args = ["--user"] if scope == "user" else ["--project", str(project)]
    assert setup(*args, env=env, cwd=project).returncode == 0
    r = claude("mcp", "get", "memtree", env=env, cwd=project)
    assert r.returncode == 0, r.stdout + r.stderr
    text = r.stdout
    assert f"Command: {MEMTREE}" in text and "Args: serve" in text and "Type: stdio" in text, text
    if scope == "user":
        assert "Scope: User config" in text and "Connected" in text, text
    else:
        assert "Scope: Project config" in text, text
