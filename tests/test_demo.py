"""`memtree demo`, the README's "run the main job" command, end to end as a real subprocess."""

from __future__ import annotations

import re
from pathlib import Path

from conftest import run_memtree


def test_demo_drives_the_server_and_reports_savings(home: Path, tmp_path: Path) -> None:
    # The default run: a scratch copy of the bundled sample project, from an empty directory.
    out = run_memtree("demo", cwd=tmp_path, timeout=240)
    assert out.returncode == 0, out.stderr[-2000:]
    text = out.stdout
    assert "connected to memtree" in text
    for call in ("$ read ", "$ grep ", "$ bash ", "$ search ", "$ compose "):
        assert call in text
    total = re.search(r"total\s+([\d,]+)\s+([\d,]+)\s+(\d+)% kept out of the window", text)
    assert total, text[-1500:]
    window, raw = (int(total.group(i).replace(",", "")) for i in (1, 2))
    assert 0 < window < raw
    assert "error:" not in text
    # The default demo works in a scratch store and stops its daemon: nothing is left in MEMTREE_HOME.
    assert not home.exists() or not any(home.iterdir())
