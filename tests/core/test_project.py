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
    assert ident.store_key == ident.hash  # known by its path alone, on a shared store too


def test_two_checkouts_of_a_repository_share_a_store_key_and_keep_their_own_hash(git_project: Path,
                                                                                tmp_path: Path) -> None:
    """The key of a project on a shared store is its repository (the first commit), wherever each machine
    checked it out; the hash of this machine's files, sockets and SQLite store holds the path too."""
    other = tmp_path / "elsewhere" / "checkout"
    other.parent.mkdir()
    git(other.parent, "clone", "-q", str(git_project), str(other))
    a, b = identify(git_project), identify(other)
    assert a.hash != b.hash and a.store_key == b.store_key
    assert a.store_key not in (a.hash, b.hash)


def test_repo_without_commits_falls_back_to_path(project: Path) -> None:
    git(project, "init", "-q")
    assert identify(project).hash == spec_hash(str(project.absolute()))


def test_missing_git_binary_falls_back(project: Path, monkeypatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    assert identify(project).hash == spec_hash(str(project.absolute()))


def test_a_repository_config_runs_no_program_while_the_project_is_identified(
        git_project: Path, tmp_path: Path) -> None:
    """git reads the repository's own config.  One that says it is a partial clone makes ``git rev-list`` fetch
    a missing commit from its "promisor" remote, running the program ``remote.<name>.uploadpack`` (or
    ``core.sshCommand``) names; ``core.fsmonitor`` is another program.  Identifying the project runs none."""
    marker = tmp_path / "ran"
    script = tmp_path / "evil.sh"
    script.write_text(f'#!/bin/sh\necho "$0 $*" >> {marker}\n')
    script.chmod(0o755)
    first = git(git_project, "rev-list", "--max-parents=0", "HEAD").strip()
    git(git_project, "commit", "-q", "--allow-empty", "-m", "second")
    (git_project / ".git" / "objects" / first[:2] / first[2:]).unlink()  # the root commit is "not fetched yet"
    for key, value in (("core.repositoryformatversion", "1"), ("extensions.partialClone", "origin"),
                       ("remote.origin.url", f"file://{tmp_path}/elsewhere"), ("remote.origin.promisor", "true"),
                       ("remote.origin.uploadpack", str(script)), ("protocol.file.allow", "always"),
                       ("core.fsmonitor", str(script))):
        git(git_project, "config", key, value)
    ident = identify(git_project)
    assert not marker.exists(), marker.read_text()
    assert ident.hash == spec_hash(str(git_project.absolute()))  # no first commit to hash: the path it is


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
