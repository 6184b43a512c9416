"""``memtree --help`` and every command's ``--help`` against a bare ``python -c pass`` of the same venv: what
the command line costs on top of Python's own start.  Goal: each <= 2x.

Two installs, each against its own floor: the ``memtree`` beside this interpreter (often an editable install,
whose import finder is a site hook every start pays, the floor included), and a wheel of this checkout
installed into a temporary venv (what a user of ``pip install memtree-mcp`` has: no finder, so a lower floor);
the wheel venv reaches this environment's dependencies through a ``.pth`` line, as tests/integration/test_wheel.py
does.  ``--no-wheel`` skips the second.  Bytecode is written and used as an install has it
(``PYTHONDONTWRITEBYTECODE`` is dropped; the first run of each command, not timed, writes it).

Runs alternate between a command and the floor, so load on the machine falls on both; each figure is the
median of ``--runs`` (``--runs``/2, at least 3, for each command), as wall time and, beside it, as CPU time
(user + system), which a busy machine's waiting inflates less.  Whether ``--help`` imported pydantic, which
command's ``--help`` is slowest, and what importing argparse, locale and textwrap alone costs (the modules any
argparse ``--help`` imports: the lowest ratio it can have) are printed too.

    python eval/bench/cli.py [--runs 10] [--no-wheel]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
HERE_MEMTREE = str(Path(sys.executable).parent / "memtree")


def timed(cmd: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU (user + system) milliseconds of one run; CPU time counts less of a busy machine's waiting."""
    r0, t0 = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
    subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, check=True)
    wall, r1 = (time.perf_counter() - t0) * 1000, resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime) * 1000


def ratio(runs: list[tuple[float, float]], floor: list[tuple[float, float]]) -> tuple[float, float]:
    """Median wall and median CPU time of ``runs``, each over the floor's."""
    def median(values: list[tuple[float, float]], i: int) -> float:
        return statistics.median(v[i] for v in values)

    return median(runs, 0) / median(floor, 0), median(runs, 1) / median(floor, 1)


def wheel_venv(work: Path) -> Path:
    """A wheel of this checkout (its files as they are now, built from a copy) installed without dependencies
    into a new venv whose ``.pth`` line reaches this environment's; that venv's ``memtree``."""
    src = work / "src"
    shutil.copytree(REPO, src, symlinks=True, ignore=shutil.ignore_patterns(
        ".git", "build", "dist", "*.egg-info", "__pycache__", ".tox", ".venv", "node_modules", ".*_cache"))
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.PIPE, "text": True}
    out = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(work / "dist"),
                          str(src)], **quiet)
    wheels = list((work / "dist").glob("memtree_mcp-*.whl"))
    if out.returncode or not wheels:
        raise SystemExit(f"building the wheel failed:\n{out.stderr[-2000:]}")
    venv = work / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    out = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps",
                          str(wheels[0])], **quiet)
    if out.returncode:
        raise SystemExit(f"installing the wheel failed:\n{out.stderr[-2000:]}")
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    ours = dict.fromkeys([sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"],
                          *(p for p in sys.path if Path(p).name in ("site-packages", "dist-packages"))])
    (Path(site) / "zz-bench-deps.pth").write_text("".join(f"{p}\n" for p in ours))
    return venv / "bin" / "memtree"


def measure(memtree: str, names: list[str], runs: int, env: dict[str, str], verbose: bool) -> None:
    python = str(Path(memtree).parent / "python")
    bare_cmd, help_cmd = [python, "-c", "pass"], [memtree, "--help"]
    for cmd in (bare_cmd, help_cmd, *([memtree, name, "--help"] for name in names)):
        timed(cmd, env)  # bytecode written, file cache warm
    # what any argparse --help imports before memtree's own work: the lowest ratio argparse allows
    stdlib_cmd = [python, "-c", "import argparse, locale, textwrap"]
    bare, helped, stdlib = [], [], []
    for _ in range(runs):
        bare.append(timed(bare_cmd, env))
        helped.append(timed(help_cmd, env))
        stdlib.append(timed(stdlib_cmd, env))
    worst = (0.0, 0.0, "")
    for name in names:
        sub, floor = [], []
        for _ in range(max(3, runs // 2)):
            floor.append(timed(bare_cmd, env))
            sub.append(timed([memtree, name, "--help"], env))
        wall, cpu = ratio(sub, floor)
        worst = max(worst, (wall, cpu, name))
        if verbose:
            print(f"  {name} --help {wall:.2f}x (cpu {cpu:.2f}x)")
    pydantic = False
    for argv in (["--help"], *([name, "--help"] for name in names)):
        trace = subprocess.run([python, "-X", "importtime", memtree, *argv], env=env, text=True,
                               capture_output=True).stderr
        pydantic |= any(line.rsplit("|", 1)[-1].strip().split(".")[0] in ("pydantic", "pydantic_settings")
                        for line in trace.splitlines())
    b, h = (statistics.median(r[0] for r in runs_) for runs_ in (bare, helped))
    wall, cpu = ratio(helped, bare)
    print(f"python -c pass   {b:7.1f} ms (median of {runs})")
    print(f"memtree --help   {h:7.1f} ms (median of {runs})")
    print(f"help             {wall:7.2f}x a bare python start (cpu time {cpu:.2f}x); pydantic imported by any "
          f"--help: {'yes' if pydantic else 'no'}")
    print(f"slowest COMMAND --help: {worst[2]} {worst[0]:.2f}x a bare python start (cpu time {worst[1]:.2f}x)")
    print("python -c 'import argparse, locale, textwrap' (what any argparse --help imports): "
          "{:.2f}x (cpu time {:.2f}x)".format(*ratio(stdlib, bare)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--no-wheel", action="store_true", help="only the memtree beside this interpreter")
    args = parser.parse_args()
    from memtree_core.cli import HOST_COMMANDS, command_table

    names = list(dict.fromkeys([*command_table(), *HOST_COMMANDS]))
    verbose = bool(os.environ.get("BENCH_VERBOSE"))
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        env = {k: v for k, v in os.environ.items() if not k.startswith("MEMTREE_") and k != "PYTHONDONTWRITEBYTECODE"}
        env["MEMTREE_HOME"] = str(work / "home")
        print(f"-- the memtree beside this interpreter ({HERE_MEMTREE})")
        measure(HERE_MEMTREE, names, args.runs, env, verbose)
        if not args.no_wheel:
            memtree = wheel_venv(work)
            print(f"-- a wheel of this checkout installed into a new venv ({memtree})")
            measure(str(memtree), names, args.runs, env, verbose)


if __name__ == "__main__":
    main()
