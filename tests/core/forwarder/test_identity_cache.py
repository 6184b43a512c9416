"""The remembered project identity (memtree_core.forwarder.records): ``memtree serve`` starts no git process
while nothing the identity depends on has changed, and recomputes it when anything has.

"No git process" is shown, not assumed: git is taken off PATH, where :func:`identify` would fall back to the
directory's path hash -- so getting the repository's identity there proves it came from the record.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
from pathlib import Path

import pytest
from helpers.common import git

from memtree_core.daemon.project import forget, identify, identify_remembered
from memtree_core.forwarder import records

INIT = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}


@pytest.fixture
def no_git(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    """Call to take git off PATH from then on."""
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    return lambda: monkeypatch.setenv("PATH", str(empty))


def _commit(repo: Path, message: str) -> None:
    (repo / f"{message}.txt").write_text(message)
    git(repo, "add", ".")
    git(repo, "commit", "-qm", message)


def test_a_remembered_identity_needs_no_git(home: Path, git_project: Path, no_git) -> None:
    sub = git_project / "pkg"
    sub.mkdir()
    expected = identify(git_project)
    assert expected.git
    for where in (git_project, sub):
        assert identify_remembered(where, home) == expected
    record = home / records.IDENTITIES_FILE
    assert stat.S_IMODE(record.stat().st_mode) == 0o600
    _commit(git_project, "second")  # a commit on the same branch keeps the first commit, so the identity
    no_git()
    for where in (git_project, sub):
        assert identify_remembered(where, home) == expected
    assert identify(git_project) != expected  # without git the uncached answer would differ


def test_a_new_repository_around_a_remembered_directory_is_seen(home: Path, tmp_path: Path) -> None:
    parent = tmp_path / "outer"
    workspace = parent / "inner"
    workspace.mkdir(parents=True)
    assert not identify_remembered(workspace, home).git
    assert "inner" in json.loads((home / records.IDENTITIES_FILE).read_text())["entries"][str(workspace)]["root"]
    git(parent, "init", "-q")
    assert not identify_remembered(workspace, home).git  # no commit yet: the path identity, as identify says
    _commit(parent, "first")
    now = identify_remembered(workspace, home)
    assert now == identify(workspace) and now.git and now.root == Path(os.path.realpath(parent))


def test_a_nested_repository_between_the_directory_and_the_top_level_is_seen(home: Path,
                                                                              git_project: Path) -> None:
    workspace = git_project / "vendor" / "lib"
    workspace.mkdir(parents=True)
    outer = identify_remembered(workspace, home)
    git(git_project / "vendor", "init", "-q")
    _commit(git_project / "vendor", "nested")
    inner = identify_remembered(workspace, home)
    assert inner == identify(workspace) and inner != outer


def test_a_repository_without_commits_is_never_remembered(home: Path, project: Path) -> None:
    git(project, "init", "-q")
    identify_remembered(project, home)
    entries = json.loads((home / records.IDENTITIES_FILE).read_text())["entries"] \
        if (home / records.IDENTITIES_FILE).exists() else {}
    assert str(project) not in entries
    _commit(project, "first")
    assert identify_remembered(project, home) == identify(project) and identify(project).git


def test_a_checkout_of_another_history_is_seen(home: Path, git_project: Path) -> None:
    before = identify_remembered(git_project, home)
    git(git_project, "checkout", "-q", "--orphan", "other")
    _commit(git_project, "another-root")
    after = identify_remembered(git_project, home)
    assert after == identify(git_project) and after.first_commit != before.first_commit


def test_another_repository_at_the_same_path_is_seen(home: Path, git_project: Path) -> None:
    before = identify_remembered(git_project, home)
    shutil.rmtree(git_project)
    git_project.mkdir()
    git(git_project, "init", "-q")
    _commit(git_project, "a-new-start")
    after = identify_remembered(git_project, home)
    assert after == identify(git_project) and after != before


def test_git_variables_that_move_the_repository_bypass_the_record(home: Path, git_project: Path, no_git,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    remembered = identify_remembered(git_project, home)
    no_git()
    monkeypatch.setenv("GIT_DIR", str(git_project / ".git"))
    assert identify_remembered(git_project, home) != remembered  # computed (and git is not there)
    monkeypatch.delenv("GIT_DIR")
    monkeypatch.setenv("GIT_EDITOR", "vi")  # an ordinary variable changes nothing
    assert identify_remembered(git_project, home) == remembered


@pytest.mark.parametrize("spoil", ["mode-0644", "symlink", "garbage", "other-shape"])
def test_a_record_that_is_not_safely_ours_is_ignored(home: Path, git_project: Path, no_git, spoil: str) -> None:
    remembered = identify_remembered(git_project, home)
    record = home / records.IDENTITIES_FILE
    if spoil == "mode-0644":
        record.chmod(0o644)
    elif spoil == "symlink":
        target = home / "elsewhere.json"
        record.rename(target)
        record.symlink_to(target)
    elif spoil == "garbage":
        record.write_bytes(b'{"format": 1, "entries": \x00\xff')
    else:
        data = json.loads(record.read_text())
        data["entries"][str(git_project)]["marks"] = "nothing"
        record.write_text(json.dumps(data))
    no_git()
    assert identify_remembered(git_project, home) != remembered


def test_forget_drops_every_directory_of_an_identity(home: Path, git_project: Path) -> None:
    sub = git_project / "pkg"
    sub.mkdir()
    remembered = identify_remembered(git_project, home)
    identify_remembered(sub, home)
    forget(home, remembered.hash)
    assert json.loads((home / records.IDENTITIES_FILE).read_text())["entries"] == {}
    assert records.lookup(home, str(git_project)) is None


def test_the_daemon_refuses_a_stale_identity_and_the_next_session_recomputes_it(
        home: Path, git_project: Path) -> None:
    """A rewritten first commit on the branch that stays checked out leaves HEAD alone, so the record cannot
    see it; the daemon runs git at start, refuses to serve the old identity and forgets it."""
    from helpers.common import wait_for
    from helpers.daemon import RawClient

    from memtree_core.daemon.control import stop
    from memtree_core.forwarder.paths import ProjectPaths

    stale = identify_remembered(git_project, home)
    git(git_project, "commit", "-q", "--amend", "-m", "rewritten")
    assert records.lookup(home, str(git_project)) is not None  # the record cannot tell
    env = {**os.environ, "MEMTREE_LOAD_PLUGINS": ""}
    client = RawClient(git_project, env)
    try:
        client.send(INIT)
        assert "result" in client.receive(timeout=120)
        client.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        client.send({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
        listed = client.receive(timeout=120)
        assert "identity changed" in json.dumps(listed), listed
        wait_for(lambda: records.lookup(home, str(git_project)) is None, 30, "the identity to be forgotten")
    finally:
        client.close()
        stop(ProjectPaths.for_hash(home, stale.hash), timeout=30, force=True)
    fresh = identify_remembered(git_project, home)
    assert fresh == identify(git_project) and fresh.hash != stale.hash


@pytest.mark.parametrize("path", ["proj", "proj/", "./proj", "a//b", "/x/./y/", "///x", "~/p", "~", "/", ".",
                                  "a/../b", "//x", "/x/..", "é/ü", "a b/c"])
def test_serve_names_paths_as_pathlib_does_or_not_at_all(path: str) -> None:
    """memtree serve looks the identity up before importing pathlib; the key must be pathlib's spelling."""
    from memtree_core.forwarder.records import as_pathlib_would

    ours = as_pathlib_would(path)
    assert ours is None or ours == str(Path(path).expanduser().absolute())
    if ".." not in path and not path.startswith("//") or path.startswith("///"):
        assert ours is not None
