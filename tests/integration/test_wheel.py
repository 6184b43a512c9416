"""What a newcomer gets from ``pip install memtree-mcp``: the wheel is built from a copy of the source, installed
into a fresh virtual environment, and ``memtree demo`` is run from an empty directory there.

The fresh environment reaches memtree's dependencies through a ``.pth`` file naming this environment's site
directories (no index needed); memtree itself must come from the wheel, which the test checks.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig
import venv
import zipfile
from pathlib import Path

import pytest
from helpers.common import REPO

from memtree_core import DISTRIBUTION
from memtree_core.daemon.project import identify
from memtree_core.forwarder.paths import ProjectPaths

# What a checkout holds that the build reads; the demo's sample is examples/bookshop and the hook scripts are
# plugin/hooks, which links in the commands and capture plugins reach (copied as links, as a checkout has them).
SOURCES = ("pyproject.toml", "README.md", "LICENSE", "bin", "memtree_core", "memtree_plugins", "examples/bookshop",
           "plugin/hooks", "skills/using-memtree")
SAMPLE_IN_WHEEL = "memtree_plugins/commands/demo-project"
HOOKS_IN_WHEEL = "memtree_plugins/capture/claude-code-hooks"


def _setuptools_at_least(major: int) -> bool:
    if importlib.util.find_spec("setuptools") is None:
        return False
    from importlib.metadata import version

    return int(version("setuptools").split(".")[0]) >= major


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel, built from a copy of the sources (a build leaves build/ and *.egg-info behind)."""
    src = tmp_path_factory.mktemp("wheel-src")
    for name in SOURCES:
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        if (REPO / name).is_dir():
            shutil.copytree(REPO / name, src / name, symlinks=True,
                            ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(REPO / name, src / name)
    out = src / "dist"
    # The SPDX `license` string needs setuptools 77: this environment's when new enough, else pip builds in
    # an isolated environment (which fetches setuptools from the package index).
    isolation = ["--no-build-isolation"] if _setuptools_at_least(77) else []
    r = subprocess.run([sys.executable, "-m", "pip", "--disable-pip-version-check", "wheel", "--quiet",
                        "--no-deps", *isolation, "-w", str(out), str(src)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    (built,) = out.glob("*.whl")
    return built


def test_the_wheel_is_named_for_pypi_and_carries_the_whole_sample(wheel: Path) -> None:
    assert wheel.name.startswith(DISTRIBUTION.replace("-", "_") + "-")
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        (meta,) = [n for n in names if n.endswith(".dist-info/METADATA")]
        metadata = z.read(meta).decode()
        (script,) = [n for n in names if n.endswith(".data/scripts/memtree")]
        command = z.read(script).decode()
    assert re.search(rf"^Name: {re.escape(DISTRIBUTION)}$", metadata, re.M)
    # The command is a plain script whose first line installers point at the environment's Python; no
    # entry-point wrapper (pip's imports `re` before memtree runs).
    assert command.startswith("#!python\n") and "from memtree_core.cli import main" in command
    assert not [n for n in names if n.endswith(".dist-info/entry_points.txt")]
    sample = REPO / "examples" / "bookshop"
    wanted = {f"{SAMPLE_IN_WHEEL}/{p.relative_to(sample).as_posix()}" for p in sample.rglob("*")
              if p.is_file() and "__pycache__" not in p.parts}
    assert wanted and wanted <= names, sorted(wanted - names)[:10]
    assert not [n for n in names if n.endswith(".pyc")]
    # memtree's packages and the sample's files, nothing else (no examples/, no sample package of memtree)
    tops = {n.split("/")[0] for n in names if ".dist-info/" not in n and ".data/" not in n}
    assert tops == {"memtree_core", "memtree_plugins"}, tops
    # The licence travels with the code: the project's own, beside the metadata.
    assert [n for n in names if re.search(r"\.dist-info/(?:licenses/)?LICENSE$", n)], sorted(names)[:5]


def test_the_wheel_carries_the_hook_scripts_executable(wheel: Path) -> None:
    """What the hooks `memtree setup claude-code` writes run: the plugin's scripts, one copy, in the package."""
    with zipfile.ZipFile(wheel) as z:
        modes = {i.filename.removeprefix(f"{HOOKS_IN_WHEEL}/"): i.external_attr >> 16 for i in z.infolist()
                 if i.filename.startswith(f"{HOOKS_IN_WHEEL}/")}
        for name in modes:
            assert z.read(f"{HOOKS_IN_WHEEL}/{name}") == (REPO / "plugin" / "hooks" / name).read_bytes(), name
    assert set(modes) == {p.name for p in (REPO / "plugin" / "hooks").iterdir()}, modes
    assert {"capture", "replace", "digest", "send.pl", "send.py", "hooks.json"} <= set(modes)
    for script in ("capture", "replace", "digest"):
        assert modes[script] & 0o111, f"{script} lost its executable bit: {oct(modes[script])}"
    with zipfile.ZipFile(wheel) as z:  # and the skill setup installs, the plugin's own file
        skill = z.read("memtree_plugins/capture/claude-code-skill/SKILL.md")
    assert skill == (REPO / "skills" / "using-memtree" / "SKILL.md").read_bytes()


def fresh_install(wheel: Path, tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """The wheel installed into a new virtual environment; its memtree finds this environment's dependencies."""
    env_dir = tmp_path / "fresh-venv"
    venv.create(env_dir, with_pip=False, symlinks=os.name != "nt")
    python = env_dir / "bin" / "python"
    r = subprocess.run([sys.executable, "-m", "pip", "--disable-pip-version-check", "--python", str(python),
                        "install", "--quiet", "--no-deps", "--no-index", str(wheel)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    fresh_site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                                     capture_output=True, text=True, check=True).stdout.strip())
    # Dependencies from this environment; the fresh site-packages stays first, so memtree is the wheel's.  Every
    # site directory on this interpreter's path: an environment may reach its packages through a .pth line of
    # its own (a .pth is not read in a directory another .pth added).
    ours = dict.fromkeys([sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"],
                          *(p for p in sys.path if Path(p).name in ("site-packages", "dist-packages"))])
    (fresh_site / "zz-test-deps.pth").write_text("".join(f"{p}\n" for p in ours))
    home = tmp_path / "home"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMTREE_", "CLAUDE_")) and k != "PYTHONPATH"}
    env |= {"MEMTREE_HOME": str(home), "MEMTREE_LOAD_PLUGINS": "", "COLUMNS": "80", "HOME": str(home)}
    return env_dir, env


def test_an_installed_wheel_runs_the_demo_in_an_empty_directory(wheel: Path, tmp_path: Path) -> None:
    env_dir, env = fresh_install(wheel, tmp_path)
    python = env_dir / "bin" / "python"
    empty = tmp_path / "empty"
    empty.mkdir()
    # (run from the empty directory: `python -c` puts the working directory, e.g. a checkout, on sys.path)
    where = subprocess.run([str(python), "-c", "import memtree_core; print(memtree_core.__file__)"],
                           cwd=empty, env=env, capture_output=True, text=True, timeout=60)
    assert Path(where.stdout.strip()).is_relative_to(env_dir), where
    out = subprocess.run([str(env_dir / "bin" / "memtree"), "demo"], cwd=empty, env=env, capture_output=True,
                         text=True, timeout=240)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "copy of the sample project" in out.stdout and "every call counted" in out.stdout
    assert "error:" not in out.stdout
    assert not any(empty.iterdir())  # the demo works on a scratch copy, never in the directory it runs in


def test_an_installed_wheels_command_help_imports_none_of_the_commands_code(wheel: Path, tmp_path: Path) -> None:
    """The wheel carries the command table (memtree_core/commands/table.json), so a command's ``--help`` from a
    pip install loads neither a plugin nor the command's module."""
    env_dir, env = fresh_install(wheel, tmp_path)
    out = subprocess.run([str(env_dir / "bin" / "python"), "-X", "importtime", str(env_dir / "bin" / "memtree"),
                          "search", "--help"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.startswith("usage: memtree search") and "--kind" in out.stdout
    assert "memtree_plugins" not in out.stderr and "pluggy" not in out.stderr, out.stderr[-3000:]


def test_an_installed_wheel_wires_claude_code_to_its_own_files(wheel: Path, tmp_path: Path) -> None:
    """`memtree setup claude-code` from a pip install: the server is that environment's memtree, the hooks its
    packaged scripts, and the written capture hook delivers a payload to that install's daemon."""
    import json
    import sqlite3

    import anyio
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    env_dir, env = fresh_install(wheel, tmp_path)
    project = tmp_path / "proj"
    project.mkdir()
    memtree = str(env_dir / "bin" / "memtree")
    r = subprocess.run([memtree, "setup", "claude-code", "--project", str(project)], env=env, cwd=project,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr[-3000:]
    assert (project / ".claude" / "skills" / "using-memtree" / "SKILL.md").read_text().startswith("---\nname: using-memtree")
    server = json.loads((project / ".mcp.json").read_text())["mcpServers"]["memtree"]
    assert server["command"] == memtree and server["args"] == ["serve"]
    hooks = json.loads((project / ".claude" / "settings.json").read_text())["hooks"]
    commands = {h["command"] for groups in hooks.values() for g in groups for h in g["hooks"]}
    scripts = {Path(shlex.split(c.removesuffix(" # added by memtree setup claude-code"))[1]) for c in commands}
    assert {s.name for s in scripts} == {"capture", "replace", "digest"}
    assert all(s.is_relative_to(env_dir) and s.is_file() for s in scripts), scripts
    (capture,) = [c for c in commands if "/capture " in c]
    payload = json.loads((REPO / "tests" / "data" / "claude-code-payloads" / "post-bash.json").read_text())
    payload |= {"cwd": str(project), "tool_use_id": "toolu_wheel_setup"}
    run_env = {**env, "CLAUDE_PROJECT_DIR": str(project), "MEMTREE_HOOK_SENDER": "python"}
    store = ProjectPaths.for_hash(Path(env["MEMTREE_HOME"]), identify(project).hash).store

    async def main() -> None:
        params = StdioServerParameters(command=server["command"], args=server["args"], env=run_env,
                                       cwd=str(project))
        with open(os.devnull, "w") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as s:
                await s.initialize()
                await s.list_tools()
                hook = subprocess.run(["/bin/sh", "-c", capture], input=json.dumps(payload).encode(),
                                      env=run_env, cwd=project, capture_output=True, timeout=30)
                assert (hook.returncode, hook.stdout) == (0, b""), hook
                for _ in range(300):
                    if store.exists():
                        conn = sqlite3.connect(f"file:{store}?mode=ro", uri=True)
                        try:
                            rows = conn.execute("SELECT count(*) FROM nodes WHERE json_extract(metadata, "
                                                "'$.tool_use_id') = 'toolu_wheel_setup'").fetchone()
                        except sqlite3.OperationalError:  # the daemon is still migrating a new store
                            rows = (0,)
                        finally:
                            conn.close()
                        if rows[0]:
                            return
                    await anyio.sleep(0.1)
                raise AssertionError("the capture never reached the wheel's daemon")

    try:
        anyio.run(main)
    finally:
        subprocess.run([memtree, "stop", "--project", str(project)], env=env, capture_output=True, timeout=60)
    assert not (Path(env["MEMTREE_HOME"]) / "hook-drops.log").exists()  # delivered, never dropped


def _code_version_in(path: list[Path]) -> str:
    out = subprocess.run([sys.executable, "-I", "-c", "import sys; sys.path[:0] = sys.argv[1:]; "
                          "from memtree_core.forwarder.records import code_version; print(code_version())",
                          *map(str, path)], capture_output=True, text=True, check=True)
    return out.stdout.strip()


@pytest.mark.parametrize("layout", ["wheel", "editable"])
def test_a_reinstall_changes_the_code_version_a_forwarder_compares(tmp_path: Path, layout: str) -> None:
    """The daemon is restarted when pip rewrote memtree's metadata; it must be found under the new name, both
    beside the packages (a wheel install) and elsewhere on sys.path (an editable install's site-packages).
    The packages are copies in the test's own folders: the running install may be either layout."""
    site, src = tmp_path / "site", tmp_path / ("site" if layout == "wheel" else "src")
    for package in ("memtree_core", "memtree_plugins"):
        (src / package).mkdir(parents=True, exist_ok=True)
        shutil.copy(REPO / package / "__init__.py", src / package / "__init__.py")
    (src / "memtree_core" / "forwarder").mkdir()
    for module in ("__init__.py", "records.py"):
        shutil.copy(REPO / "memtree_core" / "forwarder" / module, src / "memtree_core" / "forwarder" / module)
    record = site / f"{DISTRIBUTION.replace('-', '_')}-0.1.0.dist-info" / "RECORD"
    record.parent.mkdir(parents=True)
    record.write_text("memtree_core/__init__.py,,\n")
    path = [site] if layout == "wheel" else [src, site]
    before = _code_version_in(path)
    assert _code_version_in(path) == before
    record.write_text("memtree_core/__init__.py,sha256=changed,123\n")  # what a reinstall does
    assert _code_version_in(path) != before
