"""``memtree ui`` over HTTP: the token and its cookie, loopback only, read-only, and what the pages
say, on a store filled through the real daemon and served by the real ``memtree ui`` subprocess.  The
browser drives every page in tests/plugins/inspector/test_ui_browser.py.
"""

from __future__ import annotations

import http.client
import os
import re
import socket
from pathlib import Path
from urllib.parse import quote, urlsplit

import pytest
from helpers.common import run_memtree
from helpers.ui_store import Filled, fill, ui_server


def get(url: str, path: str, *, cookie: str | None = None,
        host: str | None = None) -> tuple[int, dict[str, str], str]:
    """One GET without following redirects: (status, headers lower-cased, body)."""
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=60)
    headers = {"Host": host or parts.netloc}
    if cookie:
        headers["Cookie"] = cookie
    try:
        conn.request("GET", path, headers=headers)
        r = conn.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read().decode("utf-8", "replace")
    finally:
        conn.close()


def login(url: str) -> str:
    """The cookie the server sets for the printed address."""
    parts = urlsplit(url)
    status, headers, _ = get(url, f"/?{parts.query}")
    assert status == 303 and headers["location"] == "/"
    return headers["set-cookie"].split(";", 1)[0]


@pytest.fixture
def filled(home: Path, project: Path, env: dict[str, str], daemon_guard: list[int]) -> Filled:
    return fill(project, env)


def test_without_the_token_every_request_is_refused(filled: Filled, env: dict[str, str]) -> None:
    with ui_server(filled.project, env) as (url, _proc):
        parts = urlsplit(url)
        token = parts.query.split("=", 1)[1]
        port = parts.port
        for path in ("/", "/stats", "/search?q=x", "/style.css", f"/node/{'0' * 26}"):
            status, _, body = get(url, path)
            assert status == 403 and "token" in body, (path, status)
        assert get(url, "/?token=wrong" + token[5:])[0] == 403
        assert get(url, "/", cookie=f"memtree_ui_{port}=not-it")[0] == 403
        assert get(url, "/", cookie=f"memtree_ui_{port + 1}={token}")[0] == 403  # another inspector's cookie
        # The right token in the address: a cookie (HttpOnly, SameSite=Strict), and the token leaves the address.
        status, headers, _ = get(url, f"/search?q={filled.word}&token={token}")
        assert status == 303 and headers["location"] == f"/search?q={filled.word}"
        assert "httponly" in headers["set-cookie"].lower() and "samesite=strict" in headers["set-cookie"].lower()
        cookie = headers["set-cookie"].split(";", 1)[0]
        status, headers, body = get(url, f"/search?q={filled.word}", cookie=cookie)
        assert status == 200 and "ledger.py" in body
        assert "script-src" not in headers["content-security-policy"]
        assert "default-src 'none'" in headers["content-security-policy"]
        assert re.fullmatch(r"app;dur=[0-9.]+", headers["server-timing"])
        # A page reached under another host name (DNS rebinding) is refused even with the cookie.
        assert get(url, "/", cookie=cookie, host=f"attacker.example:{port}")[0] == 403


def _listening_addresses(pid: int) -> list[tuple[str, int]]:
    """(address, port) of every TCP socket the process listens on, from /proc."""
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    found = []
    for table, width in (("tcp", 8), ("tcp6", 32)):
        for line in Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]:
            cols = line.split()
            local, state, inode = cols[1], cols[3], cols[9]
            if state != "0A" or inode not in inodes:  # 0A: LISTEN
                continue
            addr_hex, port_hex = local.split(":")
            raw = bytes.fromhex(addr_hex)
            if width == 8:
                addr = socket.inet_ntop(socket.AF_INET, raw[::-1])
            else:
                addr = socket.inet_ntop(socket.AF_INET6, b"".join(raw[i:i + 4][::-1] for i in range(0, 16, 4)))
            found.append((addr, int(port_hex, 16)))
    return found


def _other_addresses() -> list[str]:
    """This machine's IPv4 addresses other than loopback (from the routing table's source addresses)."""
    out = []
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect(("192.0.2.1", 9))  # TEST-NET: no packet is sent for a UDP connect
            out.append(s.getsockname()[0])
    except OSError:
        pass
    return [a for a in out if not a.startswith("127.")]


def test_the_server_listens_on_loopback_only(filled: Filled, env: dict[str, str]) -> None:
    with ui_server(filled.project, env) as (url, proc):
        port = urlsplit(url).port
        assert urlsplit(url).hostname == "127.0.0.1"
        listening = _listening_addresses(proc.pid)
        assert listening == [("127.0.0.1", port)], listening
        for addr in _other_addresses():
            with socket.socket() as s, pytest.raises(OSError):
                s.settimeout(5)
                s.connect((addr, port))


def test_pages_never_show_a_secret_and_draw_redactions(filled: Filled, env: dict[str, str]) -> None:
    with ui_server(filled.project, env) as (url, _proc):
        cookie = login(url)
        tree = get(url, "/", cookie=cookie)[2]
        for sid in filled.sessions:
            assert sid in tree
        node_ids = sorted(set(re.findall(r'href="/node/([0-9A-Z]{26})"', tree)))
        assert len(node_ids) >= 8
        pages = [tree, *(get(url, f"/node/{n}", cookie=cookie)[2] for n in node_ids)]
        pages += [get(url, p, cookie=cookie)[2] for p in (
            "/files", "/stats", "/search?q=deploy+key&mode=keyword&status=any", "/search?q=token",
            f"/compose?from={filled.word}&budget=4000", "/compose?from=deploy")]
        text = "\n".join(pages)
        for secret in filled.secrets:
            assert secret not in text
        # The marks are drawn as redactions, naming the rule, in node pages and in search snippets.
        assert re.search(r'<span class="redacted" title="redacted by rule [\w-]+">\[REDACTED:[\w-]+\]</span>', text)
        stats = get(url, "/stats", cookie=cookie)[2]
        assert "values redacted per rule" in stats and re.search(r"<title>[\w-]+: [1-9][0-9]*</title>", stats)


def test_a_node_page_shows_its_supersedes_chain_and_escapes_what_it_holds(
        home: Path, project: Path, env: dict[str, str]) -> None:
    from memtree_core.app import App

    app = App.open(project)
    try:
        store = app.store
        old = store.insert_node("summary", "first summary", status_="live")
        mid = store.insert_node("summary", "second summary <script>alert(1)</script>", status_="live")
        new = store.insert_node("summary", "third summary", status_="live")
        store.add_edge(mid.id, old.id, "supersedes")
        store.add_edge(new.id, mid.id, "supersedes")
        store.transition([old.id, mid.id], "superseded", "test")
    finally:
        app.close()
    with ui_server(project, env) as (url, _proc):
        cookie = login(url)
        status, _, body = get(url, f"/node/{mid.id}", cookie=cookie)
        assert status == 200
        chain = body.split("<h2>Supersedes chain</h2>", 1)[1].split("</ol>", 1)[0]
        assert [m for m in re.findall(r"/node/([0-9A-Z]{26})", chain)] == [new.id, mid.id, old.id]
        assert "<script" not in body and "&lt;script&gt;alert(1)&lt;/script&gt;" in body
        assert ">superseded<" in body and "test" in body.split("<h2>Status changes</h2>", 1)[1]
        assert get(url, "/node/NOSUCHNODE", cookie=cookie)[0] == 404
        status, _, body = get(url, "/compose?seeds=NOSUCHSEED", cookie=cookie)
        assert status == 400 and "Nothing composed: none of the node ids can be composed" in body
        assert "ValueError" not in body
        status, _, body = get(url, f"/search?q={quote('x')}&mode=nonsense&limit=abc", cookie=cookie)
        assert status == 200  # bad form values fall back to the defaults


def test_ui_without_a_store_is_one_clear_line(home: Path, project: Path, backend: str) -> None:
    """On a server: no store of this project there yet (the look creates none)."""
    out = run_memtree("ui", "--project", str(project), "--no-open", timeout=60)
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.count("\n") == 1 and "no store" in out.stderr and "Traceback" not in out.stderr
    if backend == "postgresql":
        import psycopg

        from memtree_core.daemon.project import identify

        with psycopg.connect(os.environ["MEMTREE_STORE_URL"]) as conn:
            if conn.execute("SELECT to_regclass('memtree.projects')").fetchone() != (None,):
                assert conn.execute("SELECT count(*) FROM memtree.projects WHERE hash = %s",
                                    (identify(project).store_key,)).fetchone() == (0,)


def test_the_read_only_store_refuses_writes(home: Path, project: Path, backend: str) -> None:
    """On either store, through the backend of the URL in effect (a server's read-only transactions)."""
    from memtree_core.app import App
    from memtree_plugins.inspector.readonly import ReadOnlyApp

    app = App.open(project)
    app.store.insert_node("note", "kept as it is", status_="live")
    app.close()
    ro = ReadOnlyApp.of(App.open(project))
    try:
        assert ro.store.query_one("SELECT count(*) FROM nodes")[0] == 1
        with pytest.raises(Exception, match="readonly|read-only"):
            ro.store.insert_node("note", "must not land")
        with pytest.raises(Exception, match="readonly|read-only"):
            ro.store.bump("x")
    finally:
        ro.close()
    reopened = App.open(project)
    try:
        assert [r[0] for r in reopened.store.query("SELECT content FROM nodes")] == ["kept as it is"]
        assert "x" not in reopened.store.counters()
    finally:
        reopened.close()


def test_keyword_search_snippets_a_long_body_on_the_read_only_store(home: Path, project: Path) -> None:
    """A hit longer than the snippet window is cut in a scratch FTS5 table; on the inspector's read-only
    connection that table must not be a write (``PRAGMA query_only`` refuses even a temp table)."""
    from memtree_core.app import App
    from memtree_plugins.inspector import pages
    from memtree_plugins.inspector.readonly import ReadOnlyApp
    from memtree_plugins.retrieval.snippets import WHOLE_CHARS

    app = App.open(project)
    filler = "".join(f"line {i} of an ordinary build log\n" for i in range(WHOLE_CHARS // 20))
    app.store.insert_node("tool_output", filler + "error: the zebrafish fixture is missing\n" + filler,
                          status_="live")
    app.close()
    ro = ReadOnlyApp.of(App.open(project))
    try:
        page = pages.search(ro, {"q": "zebrafish", "mode": "keyword"})
        assert page.status == 200, page.body
        assert "1 hit(s)" in page.body and "<mark>zebrafish</mark> fixture is missing" in page.body, page.body
    finally:
        ro.close()


def test_a_port_in_use_is_one_clear_line(home: Path, project: Path) -> None:
    from memtree_core.app import App

    app = App.open(project)
    app.store.insert_node("note", "something to look at", status_="live")
    app.close()
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        out = run_memtree("ui", "--project", str(project), "--no-open", "--port", str(port), timeout=60)
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.count("\n") == 1 and f"127.0.0.1:{port}" in out.stderr and "--port" in out.stderr


def test_the_inspector_reads_what_the_running_daemon_writes(home: Path, project: Path, backend: str,
                                                           env: dict[str, str], daemon_guard: list[int]) -> None:
    """On either store (``backend`` before ``env``: the daemon's and the inspector's environment name the
    server)."""
    from helpers.common import ingest_ack
    from helpers.daemon import mcp_session, project_paths, run_async, state_pid

    def capture(n: int) -> None:
        out = f"release candidate {n} built: wombatcheck passed for all {n * 11} packages\n"
        ack = ingest_ack(project_paths(project).ingest_socket, {
            "session_id": "s-live", "cwd": str(project), "hook_event_name": "PostToolUse", "tool_name": "Bash",
            "tool_input": {"command": f"make rc{n}"}, "tool_response": {"stdout": out, "stderr": "",
                                                                         "interrupted": False},
            "tool_use_id": f"toolu_live_{n}", "duration_ms": 1})
        assert ack.get("ok"), ack

    async def main() -> None:
        async with mcp_session(project, env):
            daemon_guard.append(state_pid(project))  # type: ignore[arg-type]
            capture(1)
            with ui_server(project, env) as (url, _proc):
                cookie = login(url)
                assert "make rc1" in get(url, "/?session=s-live", cookie=cookie)[2]
                capture(2)  # written by the daemon while the inspector has the store open
                body = get(url, "/?session=s-live", cookie=cookie)[2]
                assert "make rc2" in body and "make rc1" in body
                status, _, body = get(url, "/stats", cookie=cookie)
                assert status == 200 and " nodes from " in body, body
                assert ("postgresql://" in body) == (backend == "postgresql"), "the store it reads is named"

    run_async(main)


def test_pages_reach_search_and_the_graph_through_the_registries(home: Path, project: Path) -> None:
    """A plugin's retriever is a search mode of the inspector's form, and a plugin that replaces the ``search``
    tool is what the search page runs: the inspector calls the registered tools, not retrieval's code."""
    from memtree_core.app import App
    from memtree_core.hookspecs import hookimpl
    from memtree_core.types import ToolSpec
    from memtree_plugins.inspector import pages
    from memtree_plugins.inspector.readonly import ReadOnlyApp

    class Newest:
        name, fuse = "newest", False

        def available(self, app):
            return True, ""

        def retrieve(self, app, query, limit, filters):
            return []

    calls: list[dict[str, object]] = []

    class Plugin:
        @hookimpl
        def memtree_register_retrievers(self, register):
            register(Newest())

        @hookimpl(tryfirst=True)
        def memtree_register_tools(self, register):
            def build(app):
                def search(query: str, **given: object):
                    calls.append({"query": query, **given})
                    from memtree_plugins.retrieval.search import search as run

                    return run(app, query, mode="keyword", limit=3)
                return search
            register(ToolSpec("search", build, read_only=True), replaces=True)

    app = App.open(project)
    note = app.store.insert_node("note", "a zebrafish note", status_="live")
    child = app.store.insert_node("note", "its child", parent_id=note.id, status_="live")
    app.close()
    ro = ReadOnlyApp.of(App.open(project, extra=[("acme", Plugin())]))
    try:
        form = pages.search(ro, {})
        assert "<option>newest</option>" in form.body
        page = pages.search(ro, {"q": "zebrafish", "mode": "newest", "kind": "note"})
        assert page.status == 200 and note.id in page.body, page.body
        assert calls == [{"query": "zebrafish", "mode": "newest", "limit": 10, "kind": "note", "status": "live",
                          "path_prefix": None}]
        node = pages.node(ro, child.id, {})
        assert node.status == 200
        assert note.id in node.body.split("<h2>Path to root</h2>", 1)[1].split("</ol>", 1)[0]
        assert "parent" in node.body.split("<h2>Neighbors</h2>", 1)[1]
        composed = pages.compose(ro, {"from": "zebrafish", "budget": "500"})
        assert composed.status == 200 and "zebrafish" in composed.body and len(calls) == 2
    finally:
        ro.close()
