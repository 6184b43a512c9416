"""The eval's gates on the fixture project (``python -m eval --no-retrieval --no-questions``): redaction recall
and precision, gitleaks' catalogue through the hook and daemon, search, compose, budgets and leaky captures,
run as the README's test command runs everything.

One process, about a minute on one core, most of it waiting on the daemon and the hook: run as a test so
the other tests use the cores meanwhile (tests/conftest.py starts it first).  The gates' table is printed on
a failure; ``python -m eval --no-retrieval --no-questions`` prints it whole.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.timeout(900)
def test_the_eval_gates_pass_on_the_fixture(tmp_path: Path) -> None:
    env = {**os.environ, "MEMTREE_HOME": str(tmp_path / "memtree-home")}
    done = subprocess.run([sys.executable, "-m", "eval", "--no-retrieval", "--no-questions", "--blas-threads", "1"],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=880)
    table = done.stdout[done.stdout.find("\nredaction\n"):] if "\nredaction\n" in done.stdout else done.stdout
    assert done.returncode == 0, f"gates failed (exit {done.returncode}):\n{table[-6000:]}\n{done.stderr[-3000:]}"
    counted = re.search(r"\n(\d+) passed, 0 failed", done.stdout)
    assert counted is not None and int(counted.group(1)) >= 60, done.stdout[-2000:]  # every section ran
