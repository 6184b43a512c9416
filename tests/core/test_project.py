"""Project identity exactly as ``docs/architecture.md#the-plugin-host`` says, and the paths memtree keeps per
project."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from helpers.common import git

from memtree_core.daemon.project import identify
from memtree_core.forwarder.paths import ProjectPaths


def spec_hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def test_git_repo_hash_is_root_plus_first_commit(git_project: Path) -> None:
    top = git(git_project, "rev-parse", "--show-toplevel").strip()
    first = git(git_project, "rev-list", "--max-parents=0", "HEAD").strip()
    sub = git_project / "pkg"
    sub.mkdir()
    (sub / "x.py").write_text("x = 1\n")
    git(git_project, "add", ".")
    git(git_project, "commit", "-qm", "second")
    for where in (git_project, sub):
        ident = identify(where)
        assert ident.hash == spec_hash(f"{top}:{first}")
        assert ident.git and ident.root == Path(top) and ident.first_commit == first


def test_non_git_dir_hashes_its_absolute_path(project: Path) -> None:
    ident = identify(project)
    assert ident.hash == spec_hash(str(project.absolute()))
    assert not ident.git and ident.root == project


def test_repo_without_commits_falls_back_to_path(project: Path) -> None:
    git(project, "init", "-q")
    assert identify(project).hash == spec_hash(str(project.absolute()))


def test_missing_git_binary_falls_back(project: Path, monkeypatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    assert identify(project).hash == spec_hash(str(project.absolute()))


def test_paths_modes_and_socket_fallback(tmp_path: Path, private_tmpdir: Path) -> None:
    # private_tmpdir: the fallback parent is this test's own, never the shared /tmp/memtree-<uid>.
    paths = ProjectPaths.for_hash(private_tmpdir / "home", "0123456789abcdef")  # short: no fallback
    paths.ensure()
    assert (paths.dir.stat().st_mode & 0o777) == 0o700
    assert paths.store == paths.dir / "store.db"
    assert paths.ingest_socket == paths.dir / "ingest.sock"
    deep = ProjectPaths.for_hash(tmp_path / ("d" * 120), "0123456789abcdef")
    sock = deep.ingest_socket
    assert len(os.fsencode(sock)) <= 100 and sock.name == "0123456789abcdef-ingest.sock"
    assert sock.parent == private_tmpdir / f"memtree-{os.geteuid()}"
    deep.ensure()
    assert (sock.parent.stat().st_mode & 0o777) == 0o700
