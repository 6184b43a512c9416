"""The wrapped tools read / grep / bash / get, called in-process the way the daemon builds them, on real
files, a real SQLite store and real subprocesses."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from helpers import postgres

from memtree_core.errors import NotFound
from memtree_core.store.keywords import Keywords
from memtree_plugins.lib.lines import split_lines
from memtree_plugins.lib.ripgrep import find_rg
from memtree_plugins.wrappers.budget import fit_prefix, fit_suffix, head_tail

AWS_KEY = "AKIA" + "Q7RZ" + "T4XW" + "N2LB" + "K9PD"  # the shape of an access key id; no real key


def tool(app, name):
    return app.plugins.tools[name].build(app)


def rows(app, sql, params=()):
    return app.store.query(sql, params)


def node_count(app) -> int:
    return rows(app, "SELECT count(*) FROM nodes")[0][0]


def python_source(n_funcs: int = 30, body: int = 12) -> str:
    out = ['"""A generated module."""\n', "import os\n", "\n"]
    for i in range(n_funcs):
        out.append(f"\n\ndef func_{i}(a, b={i}):\n    \"\"\"Function number {i}.\"\"\"\n")
        out += [f"    v{j} = a + b * {j}  # some arithmetic to fill the line\n" for j in range(body)]
        out.append("    return a\n")
    return "".join(out)


# -- read ---------------------------------------------------------------------------------------------
def test_read_whole_file_stores_file_and_chunk_nodes(app, project: Path) -> None:
    src = python_source(4, 3)
    f = project / "mod.py"
    f.write_text(src)
    r = tool(app, "read")("mod.py")
    assert r.content == src and not r.truncated and r.omitted == []
    assert (r.start_line, r.end_line, r.total_lines) == (1, len(split_lines(src)), len(split_lines(src)))
    assert app.count_tokens(r.render()) <= app.settings.budgets.read
    st = f.stat()
    file_node = app.store.get_node(r.file_id)
    assert file_node.kind == "file" and file_node.status == "live"
    assert file_node.source_uri == f"file://{f}" and file_node.mtime == st.st_mtime_ns
    meta = file_node.meta
    assert meta["size"] == st.st_size and meta["lines"] == r.total_lines and meta["chunker"] == "python"
    kids = rows(app, "SELECT id, kind, status, source_uri, mtime, content, metadata FROM nodes "
                     "WHERE parent_id = ? ORDER BY rowid", (r.file_id,))
    assert [k[0] for k in kids] == [c.id for c in r.chunks]
    assert "".join(k[5] for k in kids) == src
    for (_cid, kind, status, uri, mtime, _content, metadata), ref in zip(kids, r.chunks, strict=True):
        m = json.loads(metadata)
        assert (kind, status, mtime) == ("file_chunk", "live", st.st_mtime_ns)
        assert uri == f"file://{f}#L{m['start_line']}-{m['end_line']}" and ref.lines == f"{m['start_line']}-{m['end_line']}"
        assert {"symbol", "kind", "outline", "tokens"} <= set(m)
    assert [c.symbol for c in r.chunks] == [None, "func_0", "func_1", "func_2", "func_3"]


def test_read_reuses_nodes_when_file_is_unchanged(app, project: Path) -> None:
    (project / "mod.py").write_text(python_source(10))
    read = tool(app, "read")
    first = read("mod.py", lines="20-60")
    n = node_count(app)
    again = read("mod.py", lines="20-60")
    other = read(str(project / "mod.py"), budget_tokens=100_000)  # absolute path, whole file: same nodes
    assert again.cached and other.cached
    assert again.model_dump() == first.model_copy(update={"cached": True}).model_dump()
    assert {c.id for c in first.chunks} <= {c.id for c in other.chunks} and other.file_id == first.file_id
    assert node_count(app) == n


def test_edit_marks_old_chunks_stale_and_supersedes_them(app, project: Path) -> None:
    f = project / "mod.py"
    f.write_text(python_source(5, 3))
    read = tool(app, "read")
    old = read("mod.py")
    old_ids = {c.symbol or c.kind: c.id for c in old.chunks}
    f.write_text(python_source(5, 3).replace("Function number 2.", "Function number two, edited."))
    os.utime(f, ns=(f.stat().st_atime_ns, f.stat().st_mtime_ns + 1_000_000))  # even on coarse clocks
    new = read("mod.py")
    assert not new.cached and new.file_id != old.file_id
    assert "Function number two, edited." in new.content
    marks = ",".join("?" * (len(old_ids) + 1))
    statuses = dict(rows(app, f"SELECT id, status FROM nodes WHERE id IN ({marks})", [*old_ids.values(), old.file_id]))
    assert set(statuses.values()) == {"stale"}
    edges = set(rows(app, "SELECT src_id, dst_id FROM edges WHERE kind = 'supersedes'"))
    assert (new.file_id, old.file_id) in edges
    new_ids = {c.symbol or c.kind: c.id for c in new.chunks}
    for key in new_ids:  # paired by symbol: func_2 -> the old func_2, and so on
        assert (new_ids[key], old_ids[key]) in edges
    # The stale version is never served again; a third read of the same content reuses the new one.
    assert read("mod.py").file_id == new.file_id


def test_windowed_file_edit_pairs_by_overlap(app, project: Path) -> None:
    f = project / "notes.txt"
    f.write_text("".join(f"line {i}\n" for i in range(450)))
    read = tool(app, "read")
    old = read("notes.txt", budget_tokens=100_000)
    f.write_text("new first line\n" + f.read_text())
    os.utime(f, ns=(f.stat().st_atime_ns, f.stat().st_mtime_ns + 1_000_000))
    new = read("notes.txt", budget_tokens=100_000)
    edges = set(rows(app, "SELECT src_id, dst_id FROM edges WHERE kind = 'supersedes'"))
    for n_ref, o_ref in zip(new.chunks, old.chunks, strict=True):
        assert (n_ref.id, o_ref.id) in edges


@pytest.mark.parametrize("spec,expect", [("10-20", (10, 20)), ("10:20", (10, 20)), ("15", (15, 15)),
                                          ("400-", (400, 451)), ("-5", (1, 5)), (" 3 - 4 ", (3, 4))])
def test_read_line_ranges(app, project: Path, spec: str, expect: tuple[int, int]) -> None:
    lines = [f"row {i}\n" for i in range(1, 452)]
    (project / "t.txt").write_text("".join(lines))
    r = tool(app, "read")("t.txt", lines=spec, budget_tokens=50_000)
    assert (r.start_line, r.end_line) == expect
    assert r.content == "".join(lines[expect[0] - 1:expect[1]])
    outside = [o for o in r.omitted if o.reason == "outside the requested lines"]
    assert all(int(o.lines.split("-")[1]) < expect[0] or int(o.lines.split("-")[0]) > expect[1] for o in outside)


def test_read_range_past_the_end_is_clamped_and_noted(app, project: Path) -> None:
    (project / "t.txt").write_text("a\nb\nc\n")
    r = tool(app, "read")("t.txt", lines="2-99")
    assert r.content == "b\nc\n" and any("3 lines" in n for n in r.notes)


@pytest.mark.parametrize("spec", ["abc", "0-3", "5-2", "1-2-3", "-"])
def test_read_bad_line_specs(app, project: Path, spec: str) -> None:
    (project / "t.txt").write_text("a\nb\n")
    with pytest.raises(ValueError, match="lines"):
        tool(app, "read")("t.txt", lines=spec)


def test_read_line_past_end_is_an_error(app, project: Path) -> None:
    (project / "t.txt").write_text("a\nb\n")
    with pytest.raises(ValueError, match="has 2 lines"):
        tool(app, "read")("t.txt", lines="5")


@pytest.mark.parametrize("budget", [200, 333, 600, 1000, 2500])
def test_read_never_exceeds_budget_and_pages_reassemble_the_file(app, project: Path, budget: int) -> None:
    src = python_source(30)
    (project / "big.py").write_text(src)
    read = tool(app, "read")
    got, line = [], 1
    total = len(split_lines(src))
    while line <= total:
        r = read("big.py", lines=f"{line}-", budget_tokens=budget)
        assert app.count_tokens(r.render()) <= budget
        assert r.tokens == app.count_tokens(r.content) <= budget
        assert r.start_line == line
        got.append(r.content)
        if not r.truncated:
            break
        assert r.next_line == r.end_line + 1  # no generated line is longer than these budgets
        for o in r.omitted:  # chunks after the cut are "over the budget", never "outside"
            o_start = int(o.lines.split("-")[0])
            assert o.reason == ("over the token budget" if o_start > r.end_line else "outside the requested lines")
        line = r.next_line
    assert "".join(got) == src


def test_read_budget_too_small_for_header_is_a_clear_error(app, project: Path) -> None:
    (project / "t.txt").write_text("hello\n")
    with pytest.raises(ValueError, match="at least"):
        tool(app, "read")("t.txt", budget_tokens=5)
    with pytest.raises(ValueError, match="positive"):
        tool(app, "read")("t.txt", budget_tokens=0)


def test_read_huge_line_is_cut_and_says_so(app, project: Path) -> None:
    (project / "min.js").write_text("var a=1;" * 5000 + "\nend\n")
    r = tool(app, "read")("min.js", budget_tokens=300)
    assert app.count_tokens(r.render()) <= 300
    assert r.truncated and r.end_line == 1 and r.next_line == 1
    assert r.content and (project / "min.js").read_text().startswith(r.content)
    assert any("line 1 was cut at the budget" in n for n in r.notes)


def test_read_bad_inputs(app, project: Path) -> None:
    read = tool(app, "read")
    with pytest.raises(NotFound, match="no such file"):
        read("nope.py")
    (project / "sub").mkdir()
    with pytest.raises(ValueError, match="is a directory"):
        read("sub")
    (project / "blob.bin").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    with pytest.raises(ValueError, match="binary"):
        read("blob.bin")
    os.mkfifo(project / "fifo")
    with pytest.raises(ValueError, match="not a regular file"):
        read("fifo")  # must not block
    with pytest.raises(ValueError, match="empty"):
        read("  ")
    assert node_count(app) == 0


def test_read_non_utf8_is_decoded_with_replacement_and_says_so(app, project: Path) -> None:
    (project / "latin.txt").write_bytes("café crème\n".encode("latin-1"))
    r = tool(app, "read")("latin.txt")
    assert r.content == "caf\ufffd cr\ufffdme\n"
    assert any("not valid UTF-8" in n for n in r.notes)
    assert any("UTF-8" in n for n in tool(app, "read")("latin.txt").notes)  # cached answer says it too


def test_read_empty_file(app, project: Path) -> None:
    (project / "empty.txt").write_text("")
    r = tool(app, "read")("empty.txt")
    assert r.content == "" and r.total_lines == 0 and r.chunks == []


def test_read_redacts_before_storing(app, project: Path) -> None:
    (project / "settings.py").write_text(f'AWS_ACCESS_KEY_ID = "{AWS_KEY}"\n\n\ndef f():\n    return 1\n')
    r = tool(app, "read")("settings.py")
    assert AWS_KEY not in r.render() and "REDACTED" in r.content
    assert r.redacted.startswith("memtree redacted 1 value: line 1 (") and "file on disk is unchanged" in r.render()
    assert rows(app, "SELECT count(*) FROM nodes WHERE content LIKE ? OR metadata LIKE ?",
                (f"%{AWS_KEY}%", f"%{AWS_KEY}%"))[0][0] == 0


def test_read_with_a_broken_chunker_plugin_falls_back_to_windows(home, project: Path) -> None:
    from memtree_core.app import App
    from memtree_core.hookspecs import hookimpl

    class Broken:
        name, priority = "broken", 1000

        def matches(self, path):
            return True

        def chunk(self, path, text):
            raise RuntimeError("boom")

    class Plugin:
        @hookimpl
        def memtree_register_chunkers(self, register):
            register(Broken())

    app = App.open(project, extra=[("broken", Plugin())])
    try:
        (project / "a.py").write_text("x = 1\n")
        r = tool(app, "read")("a.py")
        assert r.content == "x = 1\n" and any("boom" in n for n in r.notes)
    finally:
        app.close()


# -- grep ---------------------------------------------------------------------------------------------
ENGINES = ["rg", "python"] if find_rg() else ["python"]


@pytest.fixture
def tree(project: Path) -> Path:
    (project / "src").mkdir()
    (project / "src" / "a.py").write_text("import os\n\ndef alpha():\n    return 'needle one'\n\n\nx = 1\n")
    (project / "src" / "b.txt").write_text("nothing\nNEEDLE upper\nneedle two\nneedle three\nend\n")
    (project / "build").mkdir()
    (project / "build" / "out.txt").write_text("needle in an ignored file\n")
    (project / ".gitignore").write_text("build/\n*.log\n")
    (project / "x.log").write_text("needle in a log\n")
    (project / "img.bin").write_bytes(b"needle\x00\x01\x02")
    (project / ".git").mkdir()
    (project / ".git" / "config").write_text("needle in git\n")
    return project


PATH_TOKEN = "ghp_" + "Q7rZt4XwN2lBk9PdM3sV8yH1cF6gJ0aE5uLo"  # the shape of a GitHub token (36 after ghp_)


def stored_text(app) -> str:
    """Every node's source URI, content and metadata, read from the store itself (past the App's store)."""
    got = postgres.read_back(app.store, "SELECT source_uri, content, metadata FROM nodes")
    return "\n".join(str(v) for row in got for v in row)


@pytest.mark.parametrize("engine", ENGINES)
def test_a_token_in_a_paths_directory_is_stored_nowhere_by_read_or_grep(app, project: Path, engine: str,
                                                                          monkeypatch) -> None:
    from memtree_core.daemon.coordinator import Coordinator
    from memtree_plugins.retrieval.search import search

    monkeypatch.setenv("MEMTREE_GREP_ENGINE", engine)
    f = project / PATH_TOKEN / "settlement.py"
    f.parent.mkdir()
    f.write_text(python_source(3, 2).replace("arithmetic", "reconciliation"))
    read = tool(app, "read")
    r = read(f"{PATH_TOKEN}/settlement.py")
    assert r.content == f.read_text()  # the agent asked for that path: its answer is the file
    uri = app.store.get_node(r.file_id).source_uri
    assert uri == f"file://{project}/[REDACTED:github-pat]/settlement.py"
    assert read(str(f)).cached  # the same (redacted) URI finds the stored version again
    g = tool(app, "grep")("reconciliation", path=PATH_TOKEN)
    assert g.hits and g.node_id
    assert PATH_TOKEN not in stored_text(app)

    walked = Coordinator(app).run_once("staleness_marker")["staleness_marker"]
    assert walked.get("redacted_paths_skipped") == 1 and "files_gone" not in walked
    assert app.store.get_node(r.file_id).status == "live"
    found = search(app, "reconciliation")
    assert found.hits and PATH_TOKEN not in found.model_dump_json()


@pytest.mark.parametrize("engine", ENGINES)
def test_grep_finds_stores_and_previews(app, tree: Path, engine: str, monkeypatch) -> None:
    monkeypatch.setenv("MEMTREE_GREP_ENGINE", engine)
    r = tool(app, "grep")("needle", context=1)
    assert r.engine == ("ripgrep" if engine == "rg" else "python")
    assert (r.matches, r.files) == (3, 2)  # .gitignore'd, .git, binary and *.log files skipped
    assert r.hits_total == 2 and r.complete and r.node_id
    assert app.count_tokens(r.render()) <= app.settings.budgets.grep
    parent = app.store.get_node(r.node_id)
    assert parent.kind == "tool_output" and parent.status == "live" and parent.source_uri.startswith("tool:grep#")
    assert parent.meta["engine"] == r.engine and parent.meta["matches"] == 3
    by_path = {h.path: h for h in r.hits}
    a = by_path[str(Path("src/a.py"))]
    assert (a.start_line, a.end_line, a.match_lines) == (3, 5, [4])
    b = by_path[str(Path("src/b.txt"))]
    assert (b.start_line, b.end_line, b.match_lines) == (2, 5, [3, 4])
    kids = rows(app, "SELECT id, kind, status, source_uri, content, mtime FROM nodes WHERE parent_id = ?",
                (r.node_id,))
    assert {k[0] for k in kids} == {a.id, b.id}
    for cid, kind, status, uri, content, mtime in kids:
        hit = a if cid == a.id else b
        f = tree / hit.path
        assert (kind, status) == ("file_chunk", "live")
        assert uri == f"file://{f}#L{hit.start_line}-{hit.end_line}" and mtime == f.stat().st_mtime_ns
        assert content == "".join(split_lines(f.read_text())[hit.start_line - 1:hit.end_line])


@pytest.mark.parametrize("engine", ENGINES)
def test_grep_options(app, tree: Path, engine: str, monkeypatch) -> None:
    monkeypatch.setenv("MEMTREE_GREP_ENGINE", engine)
    grep = tool(app, "grep")
    assert grep("needle", ignore_case=True).matches == 4
    assert grep("needle", glob="*.py").files == 1
    assert grep("needle", glob="!*.py").files == 1
    assert grep("needle", path="src/b.txt").matches == 2
    assert grep("needle", path="build").matches == 1  # an ignored directory searched on purpose
    none = grep("no-such-text-anywhere")
    assert (none.matches, none.node_id) == (0, None) and "no matches" in none.render()


@pytest.mark.parametrize("engine", ENGINES)
def test_grep_max_hits_and_budget(app, project: Path, engine: str, monkeypatch) -> None:
    monkeypatch.setenv("MEMTREE_GREP_ENGINE", engine)
    (project / "many.txt").write_text("".join(f"hit {i}\nfiller\n" for i in range(300)))
    r = tool(app, "grep")("^hit", max_hits=20, budget_tokens=400)
    assert (r.matches, r.hits_total, r.hits_stored) == (300, 300, 20)
    assert app.count_tokens(r.render()) <= 400 and r.tokens <= 400
    assert 0 < len(r.hits) < 20 and r.hits_omitted == 300 - len(r.hits)
    assert rows(app, "SELECT count(*) FROM nodes WHERE parent_id = ?", (r.node_id,))[0][0] == 20
    listing = app.store.get_node(r.node_id).content
    assert listing.count("many.txt:") == 300  # the stored result set has every hit, not just 20


@pytest.mark.parametrize("engine", ENGINES)
def test_grep_bad_regex_is_a_clear_error(app, tree: Path, engine: str, monkeypatch) -> None:
    monkeypatch.setenv("MEMTREE_GREP_ENGINE", engine)
    with pytest.raises(ValueError, match="bad regex"):
        tool(app, "grep")("foo(")
    assert node_count(app) == 0


def test_grep_bad_arguments(app, tree: Path) -> None:
    grep = tool(app, "grep")
    with pytest.raises(NotFound):
        grep("x", path="missing-dir")
    with pytest.raises(ValueError, match="empty"):
        grep("")
    with pytest.raises(ValueError, match="max_hits"):
        grep("x", max_hits=0)
    with pytest.raises(ValueError, match="context"):
        grep("x", context=-1)


def test_grep_redacts_hits(app, project: Path) -> None:
    (project / "creds.txt").write_text(f"aws_key = {AWS_KEY}\n")
    r = tool(app, "grep")("aws_key")
    assert AWS_KEY not in r.render() and r.matches == 1
    assert rows(app, "SELECT count(*) FROM nodes WHERE content LIKE ?", (f"%{AWS_KEY}%",))[0][0] == 0


def test_grep_same_results_within_the_hour_reuse_nodes(app, tree: Path) -> None:
    grep = tool(app, "grep")
    first = grep("needle")
    n = node_count(app)
    again = grep("needle")
    assert again.deduplicated and again.node_id == first.node_id
    assert [h.id for h in again.hits] == [h.id for h in first.hits] and node_count(app) == n


# -- bash ---------------------------------------------------------------------------------------------
def test_bash_exit_code_stdout_stderr_and_node(app, project: Path) -> None:
    r = tool(app, "bash")("pwd; echo to-stderr >&2; exit 3")
    assert r.exit_code == 3 and not r.timed_out and r.stored
    assert str(project) in r.preview and "to-stderr" in r.preview
    node = app.store.get_node(r.node_id)
    assert node.kind == "tool_output" and node.status == "live" and node.source_uri.startswith("tool:bash#")
    assert node.content.startswith("$ pwd; echo to-stderr >&2; exit 3\n")
    assert "[stderr]\nto-stderr" in node.content and node.content.rstrip().endswith("[exit 3]")
    meta = node.meta
    assert meta["exit_code"] == 3 and meta["command"].startswith("pwd") and meta["bytes"] == len(str(project)) + 1 + 10
    assert isinstance(meta["duration_ms"], int) and not node.truncated


def test_bash_output_reaches_the_agent_when_the_store_cannot_be_written(app, project: Path) -> None:
    # another process writing, for longer than the store waits (10 s by default, shortened here); a process:
    # SQLite's locks are per process, and a server's write lock is a session's
    if app.store.dialect == "sqlite":
        app.store.execute("PRAGMA busy_timeout = 50")
        code = ("import sqlite3, sys\nc = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
                "c.execute('BEGIN IMMEDIATE')\n")
        target = str(app.paths.store)
    else:
        from memtree_core.store.postgres.schema import lock_key

        app.store.write_wait_ms = 200
        code = ("import psycopg, sys\nc = psycopg.connect(sys.argv[1], autocommit=True)\n"
                f"c.execute('SELECT pg_advisory_lock(hashtextextended(%s, 0))', ({lock_key('write', app.store.project)!r},))\n")
        target = app.store.url
    holder = subprocess.Popen([sys.executable, "-c", code + "print('held', flush=True); sys.stdin.read()", target],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        marker = project / "ran.txt"
        r = tool(app, "bash")(f"echo ran > {marker}; echo the-output")
    finally:
        holder.communicate("", timeout=30)
    assert marker.read_text() == "ran\n"  # the command ran once: its output is the agent's, stored or not
    assert r.exit_code == 0 and "the-output" in r.preview and not r.stored and r.node_id is None
    assert r.not_stored_reason is not None and "could not be written" in r.not_stored_reason
    assert ("locked" if app.store.dialect == "sqlite" else "the store is busy") in r.not_stored_reason


def test_bash_budget_is_never_exceeded(app) -> None:
    bash = tool(app, "bash")
    for budget in (250, 400, 1000):
        r = bash("seq 1 5000", budget_tokens=budget)
        assert app.count_tokens(r.render()) <= budget and r.preview_truncated
        assert r.preview.startswith("1\n") and r.preview.rstrip().endswith("[exit 0]")  # head and tail


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(") ")[-1][0] != "Z"
    except FileNotFoundError:
        return False


def test_bash_timeout_kills_the_process_group_and_keeps_partial_output(app, tmp_path: Path) -> None:
    pidfile = tmp_path / "bg.pid"
    start = time.monotonic()
    r = tool(app, "bash")(f"echo started; sleep 300 & echo $! > {pidfile}; sleep 300", timeout=1)
    assert time.monotonic() - start < 15
    assert r.timed_out and r.exit_code is not None and r.exit_code < 0
    assert "started" in r.preview and "timed out" in r.render()
    pid = int(pidfile.read_text())
    deadline = time.monotonic() + 5
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(pid), "the background child of the timed-out command survived"
    assert app.store.get_node(r.node_id).meta["timed_out"] is True


def test_bash_bad_arguments(app) -> None:
    bash = tool(app, "bash")
    with pytest.raises(ValueError, match="empty"):
        bash("   ")
    with pytest.raises(ValueError, match="timeout"):
        bash("true", timeout=0)
    with pytest.raises(ValueError, match="positive"):
        bash("true", budget_tokens=-1)
    assert "lowered" in bash("true", timeout=10_000).render()


HUGE = textwrap.dedent("""
    import json, os, resource, sys
    from memtree_core.app import App
    app = App.open(sys.argv[1])
    bash = app.plugins.tools["bash"].build(app)
    bash("true")  # warm up: imports, store, first node
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    r = bash("yes | head -c 100000000")
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    node = app.store.get_node(r.node_id)
    print(json.dumps({"growth_kb": after - before, "stdout_bytes": r.stdout_bytes, "exit": r.exit_code,
                      "stored_bytes": len(node.content.encode()), "truncated": node.truncated,
                      "original_bytes": node.original_bytes, "render_tokens": app.count_tokens(r.render())}))
""")


def test_bash_100mb_output_stays_bounded_in_memory_and_in_the_store(home, project: Path) -> None:
    out = subprocess.run([sys.executable, "-c", HUGE, str(project)], capture_output=True, text=True,
                         timeout=120, env={**os.environ})
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    assert got["stdout_bytes"] == 100_000_000 and got["exit"] == 0
    assert got["growth_kb"] < 40_000, got  # holding the output would add ~100 MB (+ a decoded copy)
    assert got["stored_bytes"] <= 100_000 and got["truncated"] == 1 and got["original_bytes"] == 100_000_000
    assert got["render_tokens"] <= 1000


def test_bash_same_output_within_the_hour_reuses_the_node(app) -> None:
    bash = tool(app, "bash")
    first = bash("echo same output")
    n = node_count(app)
    again = bash("echo same output")
    assert again.deduplicated and again.node_id == first.node_id and node_count(app) == n
    assert not bash("echo other output").deduplicated


def test_bash_secret_is_redacted_in_result_and_store(app) -> None:
    r = tool(app, "bash")(f"echo 'key: {AWS_KEY}'")
    assert AWS_KEY not in r.render() and AWS_KEY not in r.model_dump_json()
    assert r.redactions and "REDACTED" in r.preview
    assert rows(app, "SELECT count(*) FROM nodes WHERE content LIKE ? OR metadata LIKE ?",
                (f"%{AWS_KEY}%", f"%{AWS_KEY}%"))[0][0] == 0
    assert app.store.keyword_count(Keywords((AWS_KEY,))) == 0


def test_every_wrapper_counts_its_redactions_for_stats(app, project: Path) -> None:
    """`memtree stats` counts values redacted by read, grep and bash, not only by socket captures."""
    line = f"aws_key = {AWS_KEY}"
    once = sum(app.redact(line)[1].values())
    assert once >= 1

    def total() -> int:
        return sum(app.store.counters("redaction:").values())

    (project / "creds.txt").write_text(line + "\n")
    before = total()
    tool(app, "read")("creds.txt")
    assert total() - before == once
    before = total()
    tool(app, "grep")("aws_key")  # its stored listing and its previews hold the value once
    assert total() - before == once
    before = total()
    tool(app, "bash")(f"echo '{line}'")
    assert total() - before >= once  # the command line is redacted as well as its output
    before = total()
    tool(app, "read")("creds.txt")  # unchanged: served from the store, nothing redacted again
    assert total() == before


def test_bash_env_dump_is_never_stored(app, monkeypatch) -> None:
    # a small environment, so the marker is inside the preview whatever the size of the one the suite runs in
    for var in list(os.environ):
        if var not in ("PATH", "HOME"):
            monkeypatch.delenv(var)
    monkeypatch.setenv("MEMTREE_TEST_MARKER", "visible-marker")
    r = tool(app, "bash")("env", budget_tokens=100_000)  # the whole environment, however big, fits the preview
    assert not r.stored and r.node_id is None and "deny list" in r.not_stored_reason
    # The caller still sees the output, names kept and every value redacted (it is a dump by its shape).
    assert "MEMTREE_TEST_MARKER=[REDACTED:env-dump]" in r.preview and "visible-marker" not in r.preview
    assert node_count(app) == 0


def test_bash_deny_file_and_capture_off(home, project: Path, monkeypatch) -> None:
    from memtree_core.app import App

    app = App.open(project)
    try:
        app.paths.ensure()
        app.paths.bash_deny.write_text("^secret-tool\\b\n")
        r = tool(app, "bash")("secret-tool() { echo x; }; secret-tool")
        assert not r.stored and "bash.deny" in r.not_stored_reason
    finally:
        app.close()
    monkeypatch.setenv("MEMTREE_CAPTURE__BASH", "false")
    app = App.open(project)
    try:
        r = tool(app, "bash")("echo hi")
        assert not r.stored and "capture.bash" in r.not_stored_reason and node_count(app) == 0
    finally:
        app.close()


# -- get ----------------------------------------------------------------------------------------------
def test_get_pages_reassemble_exactly(app, project: Path) -> None:
    text = "".join(f"línea {i} — ünïcødé ✓ {'x' * (i % 50)}\n" for i in range(400))
    (project / "u.txt").write_text(text)
    chunk_id = tool(app, "read")("u.txt", budget_tokens=100_000).chunks[0].id
    stored = app.store.get_node(chunk_id).content
    get = tool(app, "get")
    pages, offset = [], 0
    while True:
        p = get(chunk_id, offset=offset, budget_tokens=150)
        assert app.count_tokens(p.render()) <= 150 and p.offset == offset
        pages.append(p.content)
        if p.done:
            assert p.next_offset is None
            break
        assert p.next_offset == offset + len(p.content) and p.content
        offset = p.next_offset
    assert "".join(pages) == stored and len(pages) > 3
    one = get(chunk_id, budget_tokens=10**9)
    assert one.done and one.content == stored and one.total_chars == len(stored)


def test_get_bad_inputs(app) -> None:
    get = tool(app, "get")
    with pytest.raises(NotFound, match="no node"):
        get("01NOTANID")
    node = app.store.insert_node("note", "hello world", status_="live")
    with pytest.raises(ValueError, match="positive"):
        get(node.id, budget_tokens=0)
    with pytest.raises(ValueError, match="past the end"):
        get(node.id, offset=99)
    with pytest.raises(ValueError, match="offset"):
        get(node.id, offset=-1)
    with pytest.raises(ValueError, match="at least"):
        get(node.id, budget_tokens=3)
    r = get(node.id)
    assert r.content == "hello world" and r.kind == "note" and r.status == "live" and r.done


def test_get_reports_truncated_captures(app) -> None:
    r = tool(app, "bash")("seq 1 100000")
    g = tool(app, "get")(r.node_id, budget_tokens=200)
    assert g.truncated and g.original_bytes > 100_000 and not g.done


# -- the shared budget cutter -------------------------------------------------------------------------
def _lumpy(text: str) -> int:
    """A deliberately odd counter: not additive, with a per-line surcharge."""
    return len(text) // 3 + text.count("\n") * 2 + (1 if text.endswith(("{", "(")) else 0)


@pytest.mark.parametrize("count", [None, _lumpy])
def test_budget_cutters_never_exceed(app, count) -> None:
    count = count or app.count_tokens
    text = "".join(f"{i}: {'word ' * (i % 17)}{{(\n" for i in range(500))
    for budget in (1, 7, 50, 333, 2000):
        head = fit_prefix(text, budget, count)
        tail = fit_suffix(text, budget, count)
        both = head_tail(text, budget, count)
        assert text.startswith(head) and text.endswith(tail)
        assert count(head) <= budget and count(tail) <= budget and count(both.text) <= budget
        assert both.truncated
    assert fit_prefix("short", 100, count) == "short"
    assert head_tail("short", 100, count).text == "short"
    cut = head_tail(text, 500, count)
    assert "omitted" in cut.text and cut.text.startswith("0: ") and cut.text.endswith("{(\n")
