"""This machine's identity (memtree_core/store/machine.py): ``$MEMTREE_HOME/machine-id``, made once and kept.

Real files and real processes: each home stands for one machine (docs/postgresql.md, "Staleness per checkout").
"""

from __future__ import annotations

import os
import re
import socket
import stat
import subprocess
import sys
from pathlib import Path

from memtree_core.store.machine import FILE, machine_id


def test_made_once_private_and_kept(tmp_path: Path) -> None:
    home = tmp_path / "home"
    first = machine_id(home)
    path = home / FILE
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert path.read_text() == first + "\n"
    host, _, ulid = first.rpartition("-")
    assert len(ulid) == 26 and host == re.sub(r"[^A-Za-z0-9._-]+", "-", socket.gethostname()).strip("-._")[:63]
    assert machine_id(home) == first  # read back, not made again
    assert machine_id(tmp_path / "other-home") != first  # another home is another machine
    assert sorted(p.name for p in home.iterdir()) == [FILE]  # no temporary file left behind


def test_a_garbled_or_unreadable_file_is_replaced_never_fatal(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / FILE).write_bytes(b"\xff\xfe not an id\n")
    new = machine_id(home)
    assert (home / FILE).read_text() == new + "\n" and machine_id(home) == new
    (home / FILE).write_text("")
    assert machine_id(home) != new  # an empty file is no id either: a new one
    (home / FILE).unlink()
    (home / FILE).mkdir()  # cannot be read, cannot be replaced: an id derived from the host and the home
    derived = machine_id(home)
    assert derived == machine_id(home) and (home / FILE).is_dir()


def test_processes_making_it_at_once_agree(tmp_path: Path) -> None:
    home = tmp_path / "home"
    code = "import sys; from memtree_core.store.machine import machine_id; print(machine_id(sys.argv[1]))"
    procs = [subprocess.Popen([sys.executable, "-c", code, str(home)], stdout=subprocess.PIPE, text=True)
             for _ in range(4)]
    said = {p.communicate(timeout=60)[0].strip() for p in procs}
    assert said == {(home / FILE).read_text().strip()}
    assert all(p.returncode == 0 for p in procs)
    assert os.listdir(home) == [FILE]
