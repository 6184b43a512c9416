"""What a newcomer gets from ``pip install memtree-mcp``: the wheel is built from a copy of the source, installed
into a fresh virtual environment, and ``memtree demo`` is run from an empty directory there.

The fresh environment reaches memtree's dependencies through a ``.pth`` file naming this environment's site
directories (no index needed); memtree itself must come from the wheel, which the test checks.
"""

from __future__ import annotations

import importlib.util
import os
import re
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

# What a checkout holds that the build reads; the demo's sample is examples/bookshop, which a link in the commands
# plugin reaches (copied as a link, as a checkout has it).
SOURCES = ("pyproject.toml", "README.md", "LICENSE", "bin", "memtree_core", "memtree_plugins", "examples/bookshop")
SAMPLE_IN_WHEEL = "memtree_plugins/commands/demo-project"


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


def test_an_installed_wheel_runs_the_demo_in_an_empty_directory(wheel: Path, tmp_path: Path) -> None:
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
    empty = tmp_path / "empty"
    empty.mkdir()
    home = tmp_path / "home"
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMTREE_") and k != "PYTHONPATH"}
    env |= {"MEMTREE_HOME": str(home), "MEMTREE_LOAD_PLUGINS": "", "COLUMNS": "80"}
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
