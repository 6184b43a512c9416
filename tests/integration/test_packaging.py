"""The repository is a Claude Code plugin (its root is the plugin root: ``docs/architecture.md#parts``):
manifests with the fields a plugin and its marketplace entry need, component paths that resolve inside the
plugin root, a skill that follows the Agent Skills rules, and Claude Code's own validator (``claude plugin
validate``, pinned in package.json) accepting all of it — offline, without an API key.
"""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from helpers.npm_tools import npm_tool

REPO = Path(__file__).resolve().parents[2]
PLUGIN = REPO / ".claude-plugin" / "plugin.json"
MARKETPLACE = REPO / ".claude-plugin" / "marketplace.json"
SKILLS = REPO / "skills"
# Keys of plugin.json whose value may be a path (or list of paths) to a component.
COMPONENT_KEYS = ("commands", "agents", "skills", "hooks", "mcpServers", "outputStyles", "lspServers")


def load(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text())


# -- manifests -------------------------------------------------------------------------------------------
def test_plugin_manifest_has_the_required_fields_and_no_version() -> None:
    m = load(PLUGIN)
    assert m["name"] == "memtree"
    assert m["description"].strip()
    assert m["author"]["name"].strip()
    assert m["homepage"].startswith("https://") and m["repository"].startswith("https://")
    assert m["license"] == "MIT"
    # No version, so every commit is a version users can pull.
    assert "version" not in m
    assert m["hooks"] == "./plugin/hooks/hooks.json"
    assert m["skills"] == "./skills/"


def test_the_mcp_server_runs_memtree_serve_from_the_plugin_root_for_the_users_project() -> None:
    server = load(PLUGIN)["mcpServers"]["memtree"]
    # The launcher in the plugin root (tests/integration/test_plugin_serve.py runs it).  Only uv is needed on the user's
    # machine: `uv run --project <plugin root>` (or `uv sync` there) builds the plugin's own environment once,
    # in <plugin root>/.venv, and afterwards it starts without touching the network.  (uvx --from <dir> was
    # rejected: it re-resolves against the index on every start and fails offline.)
    assert server["command"] == "${CLAUDE_PLUGIN_ROOT}/plugin/serve"
    launcher = (REPO / "plugin" / "serve").read_text()
    assert 'exec uv run --project "$root" --quiet memtree serve "$@"' in launcher
    assert 'uv sync --project "$root" --quiet' in launcher
    # The project is the user's, never the plugin's install directory (which may be the server's cwd).
    assert server["args"] == ["--project", "${CLAUDE_PROJECT_DIR}"]


def test_the_command_the_launcher_runs_is_the_one_the_package_installs() -> None:
    import tomllib

    scripts = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["script-files"]
    installed = {Path(s).name for s in scripts}
    launcher = (REPO / "plugin" / "serve").read_text()
    started = set(re.findall(r'exec "\$venv/bin/(\w+)" serve', launcher))
    started |= set(re.findall(r"--quiet (\w+) serve", launcher))
    assert started and started <= installed, started


def test_the_memtree_command_imports_nothing_before_memtrees_own_code() -> None:
    """pip's wrapper for a [project.scripts] entry point imports `re` first (a third of a second session's
    start); the shipped script goes straight to the CLI, whose `serve` path is stdlib-light."""
    script = REPO / "bin" / "memtree"
    assert os.access(script, os.X_OK)
    tree = ast.parse(script.read_text())
    imported = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    imported |= {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module}
    assert imported == {"sys", "memtree_core.cli"}, imported


def component_paths(manifest: dict[str, Any]) -> list[str]:
    out: list[str] = []
    for key in COMPONENT_KEYS:
        value = manifest.get(key)
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, str):
                out.append(item)
    return out


def test_every_component_path_starts_with_dot_slash_exists_and_stays_in_the_root() -> None:
    paths = component_paths(load(PLUGIN))
    assert set(paths) == {"./plugin/hooks/hooks.json", "./skills/"}
    for p in paths:
        assert p.startswith("./"), p
        target = (REPO / p).resolve()
        assert target.is_relative_to(REPO), f"{p} leaves the plugin root"
        assert target.exists(), f"{p} does not exist"


def test_marketplace_lists_this_repository_as_the_plugin() -> None:
    m = load(MARKETPLACE)
    assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", m["name"])
    assert m["owner"]["name"].strip()
    (entry,) = m["plugins"]
    assert entry["name"] == load(PLUGIN)["name"]
    assert entry["source"] == "./"
    assert "version" not in entry


# -- the skill -------------------------------------------------------------------------------------------
NAME = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
KNOWN_FIELDS = {"name", "description", "license", "compatibility", "metadata", "allowed-tools"}


def parse_skill(text: str) -> tuple[dict[str, str], str]:
    """Split SKILL.md into its frontmatter (one-line ``key: value`` pairs) and its body."""
    if not text.startswith("---\n"):
        raise ValueError("SKILL.md must start with a '---' frontmatter block")
    end = text.find("\n---\n", 4)
    if end < 0:
        raise ValueError("the frontmatter block is not closed with '---'")
    fields: dict[str, str] = {}
    for line in text[4:end].splitlines():
        if not line.strip() or line.startswith((" ", "\t")):
            continue
        key, sep, value = line.partition(":")
        if not sep:
            raise ValueError(f"frontmatter line is not 'key: value': {line!r}")
        fields[key.strip()] = value.strip().strip("'\"")
    return fields, text[end + 5:]


def lint_skill(folder: str, text: str) -> list[str]:
    """Problems with a skill under the Agent Skills rules (agentskills.io specification)."""
    try:
        fields, body = parse_skill(text)
    except ValueError as exc:
        return [str(exc)]
    problems = []
    name = fields.get("name", "")
    if not (1 <= len(name) <= 64 and NAME.fullmatch(name)):
        problems.append(f"name {name!r}: 1-64 lowercase letters, digits and single hyphens, no hyphen at an end")
    if name != folder:
        problems.append(f"name {name!r} must equal its folder name {folder!r}")
    description = fields.get("description", "")
    if not 1 <= len(description) <= 1024:
        problems.append(f"description must be 1-1024 characters (has {len(description)})")
    if "compatibility" in fields and not 1 <= len(fields["compatibility"]) <= 500:
        problems.append("compatibility must be 1-500 characters")
    unknown = set(fields) - KNOWN_FIELDS
    if unknown:
        problems.append(f"unknown frontmatter fields: {sorted(unknown)}")
    if not body.strip():
        problems.append("the body is empty")
    return problems


def test_every_skill_passes_the_agent_skills_rules() -> None:
    skills = sorted(SKILLS.glob("*/SKILL.md"))
    assert [s.parent.name for s in skills] == ["using-memtree"]
    for skill in skills:
        assert lint_skill(skill.parent.name, skill.read_text()) == [], skill


def test_the_skill_says_when_to_use_memtree_and_names_every_tool() -> None:
    fields, body = parse_skill((SKILLS / "using-memtree" / "SKILL.md").read_text())
    for trigger in ("large codebase", "long session"):
        assert trigger in fields["description"].lower()
    for tool in ("read", "grep", "bash", "search", "get", "compose", "neighbors", "path_to_root", "recent"):
        assert re.search(rf"`{tool}\(", body), f"the skill does not show how to call {tool}"
    # the names the client actually shows, as a plugin and as a plain MCP server
    assert "mcp__plugin_memtree_memtree__" in body and "mcp__memtree__" in body


@pytest.mark.parametrize(("folder", "text", "problem"), [
    ("x", "name: x\ndescription: d\n", "must start with a '---'"),
    ("Bad-Name", "---\nname: Bad-Name\ndescription: d\n---\nbody\n", "lowercase"),
    ("a--b", "---\nname: a--b\ndescription: d\n---\nbody\n", "single hyphens"),
    ("other", "---\nname: mine\ndescription: d\n---\nbody\n", "folder name"),
    ("s", "---\nname: s\ndescription: " + "x" * 1025 + "\n---\nbody\n", "1-1024"),
    ("s", "---\nname: s\ndescription: d\n---\n\n", "body is empty"),
    ("s", "---\nname: s\ndescription: d\nversion: 1\n---\nbody\n", "unknown frontmatter"),
])
def test_the_skill_lint_catches_each_rule(folder: str, text: str, problem: str) -> None:
    assert any(problem in p for p in lint_skill(folder, text))


# -- Claude Code's own validator -------------------------------------------------------------------------
def claude_validate(root: Path, tmp_path: Path) -> tuple[int, dict[str, Any]]:
    """``claude plugin validate --json <root>`` with no API key and an empty HOME (nothing of the user's)."""
    home = tmp_path / "claude-home"
    home.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("ANTHROPIC_", "CLAUDE_")) and k not in ("HOME", "XDG_CONFIG_HOME")}
    env["HOME"] = str(home)
    r = subprocess.run([*npm_tool("@anthropic-ai/claude-code", "claude"), "plugin", "validate", "--json",
                        str(root)], capture_output=True, text=True, timeout=300, env=env)
    try:
        return r.returncode, json.loads(r.stdout)
    except json.JSONDecodeError:
        raise AssertionError(f"validate printed no JSON (exit {r.returncode}):\n{r.stdout}\n{r.stderr}") from None


def plugin_root(tmp_path: Path) -> Path:
    """The repository, or — while the capture hook's hooks.json has not landed — a copy of the plugin's
    files with a stand-in hooks.json (never written into the repository)."""
    if (REPO / "plugin" / "hooks" / "hooks.json").exists():
        return REPO
    root = tmp_path / "plugin-root"
    for part in (".claude-plugin", "skills"):
        shutil.copytree(REPO / part, root / part)
    (root / "plugin" / "hooks").mkdir(parents=True)
    (root / "plugin" / "hooks" / "hooks.json").write_text(json.dumps({"hooks": {}}))
    return root


def warnings_of(report: dict[str, Any]) -> dict[str, list[str]]:
    out = {report["manifest"]["file"]: [w["path"] for w in report["manifest"]["warnings"]]}
    for c in report["contents"]:
        out[c["file"]] = [w["path"] for w in c["warnings"]]
    return out


def test_claude_plugin_validate_passes(tmp_path: Path) -> None:
    root = plugin_root(tmp_path)
    code, report = claude_validate(root, tmp_path)
    assert code == 0 and report["success"] is True, json.dumps(report, indent=1)
    files = [report["manifest"], *report["contents"]]
    assert [e for f in files for e in f["errors"]] == []
    checked = {Path(f["file"]).relative_to(root).as_posix() for f in files}
    assert {".claude-plugin/marketplace.json", ".claude-plugin/plugin.json"} <= checked
    provides = report["provides"]
    # hooks.json is read (it is listed under contents only when it has something to say)
    assert {(h["event"], h["command"].rsplit("/", 1)[-1]) for h in provides["hooks"]} >= {
        ("PostToolUse", "capture"), ("PostToolUseFailure", "capture")}
    assert [s["name"] for s in provides["mcpServers"]] == ["memtree"]
    assert provides["skills"] == ["memtree:using-memtree"]


def test_the_only_warning_on_the_manifests_is_the_deliberately_missing_version(tmp_path: Path) -> None:
    root = plugin_root(tmp_path)
    _, report = claude_validate(root, tmp_path)
    mine = {k: v for k, v in warnings_of(report).items() if Path(k).parent.name == ".claude-plugin"}
    assert mine == {str(root / ".claude-plugin" / "marketplace.json"): ["plugins[0] plugin.json → version"],
                    str(root / ".claude-plugin" / "plugin.json"): ["version"]}


def test_claude_plugin_validate_rejects_a_component_path_outside_the_root(tmp_path: Path) -> None:
    """The validator is real (and works offline): a manifest that breaks the path rule fails it."""
    root = tmp_path / "broken"
    shutil.copytree(REPO / ".claude-plugin", root / ".claude-plugin")
    (root / ".claude-plugin" / "marketplace.json").unlink()
    shutil.copytree(REPO / "skills", root / "skills")
    manifest = load(root / ".claude-plugin" / "plugin.json")
    manifest["hooks"] = "../outside/hooks.json"
    (root / ".claude-plugin" / "plugin.json").write_text(json.dumps(manifest))
    code, report = claude_validate(root, tmp_path)
    assert code != 0 and report["success"] is False
    errors = [e for f in [report["manifest"], *report["contents"]] for e in f["errors"]]
    assert any("hooks" in e["path"] for e in errors), errors
