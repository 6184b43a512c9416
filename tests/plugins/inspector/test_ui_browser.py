"""``memtree ui`` in a real browser: headless Debian Chromium driven by Playwright through every
page of a store filled through the real daemon, checking what each page says, with a screenshot of each
saved as a test artifact (``$MEMTREE_UI_ARTIFACTS`` when set, else under the test's tmp directory), and the
store file unchanged afterwards.

Chromium is the system's (``apt-get install -y chromium``; .ci/run installs it): Playwright is pointed at
that executable and never downloads a browser of its own.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers.ui_store import Filled, fill, ui_server

pytestmark = pytest.mark.browser  # its own tox env (`tox -e browser`): `tox` passes on a machine without Chromium
CHROMIUM = "/usr/bin/chromium"
# Read at import: the `home` fixture clears every MEMTREE_* variable before a test runs.
ARTIFACTS = os.environ.get("MEMTREE_UI_ARTIFACTS")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]


@pytest.fixture
def browser() -> Iterator[Any]:
    # Not a skip: CI installs Chromium, so a missing one is a broken setup that must be seen.
    if not os.access(CHROMIUM, os.X_OK):
        pytest.fail(f"{CHROMIUM} is missing: install Debian's Chromium with "
                    "'DEBIAN_FRONTEND=noninteractive apt-get install -y chromium' (as root; .ci/run does)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.fail("the playwright package is missing: pip install -e '.[test]' (it is in the test extra)")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            yield b
        finally:
            b.close()


@pytest.fixture
def artifacts(tmp_path: Path, request: pytest.FixtureRequest) -> Path:
    d = Path(ARTIFACTS) / request.node.name if ARTIFACTS else tmp_path / "screenshots"
    d.mkdir(parents=True, exist_ok=True)
    return d


@pytest.fixture
def filled(home: Path, project: Path, env: dict[str, str], daemon_guard: list[int]) -> Filled:
    return fill(project, env)


def _fingerprint(store: Path) -> dict[str, tuple[int, int, str]]:
    """(size, mtime_ns, sha256) of the store and its write-ahead log, where they exist."""
    out = {}
    for suffix in ("", "-wal"):
        p = Path(f"{store}{suffix}")
        if p.exists():
            st = p.stat()
            out[suffix or "db"] = (st.st_size, st.st_mtime_ns, hashlib.sha256(p.read_bytes()).hexdigest())
    return out


def test_every_page_in_chromium(filled: Filled, env: dict[str, str], browser: Any, artifacts: Path) -> None:
    before = _fingerprint(filled.store)
    shots: list[str] = []

    with ui_server(filled.project, env) as (url, _proc):
        base = url.split("/?", 1)[0]
        # No token, no page: a fresh browser context has no cookie.
        stranger = browser.new_page()
        response = stranger.goto(base + "/stats")
        assert response.status == 403 and "Forbidden" in stranger.inner_text("body")
        stranger.close()

        page = browser.new_page(viewport={"width": 1280, "height": 900})
        seen_hosts: set[str] = set()
        page.on("request", lambda r: seen_hosts.add(r.url.split("/")[2]))

        def visit(path: str, name: str) -> str:
            response = page.goto(base + path if path.startswith("/") else path)
            assert response.status == 200, (path, response.status, page.inner_text("body")[:500])
            file = artifacts / f"{len(shots) + 1:02d}-{name}.png"
            page.screenshot(path=str(file), full_page=True)
            shots.append(file.name)
            text = page.inner_text("main")
            for secret in filled.secrets:
                assert secret not in page.content(), f"{name} shows a secret"
            return text

        # Tree: the token address logs in (a cookie) and lands on the tree without the token.
        text = visit(url, "tree")
        assert page.url == base + "/"
        assert "Sessions" in text and all(s in text for s in filled.sessions)
        assert re.search(r"live\s+tool_output\s+[0-9A-Z]{26}\s+Bash: make step1", text) and "file_chunk" in text
        # One session's calls.
        page.locator("a", has_text=filled.sessions[1]).first.click()
        text = page.inner_text("main")
        assert f"Session {filled.sessions[1]}" in text and "make step1" in text and "make step0" not in text

        # Files: both project files, with their chunks by status; the edited file has stale chunks.
        text = visit("/files", "files")
        assert "ledger.py" in text and "settings.py" in text
        row = page.locator("tr", has_text="ledger.py").inner_text()
        assert "live" in row and ("stale" in row or "superseded" in row), row
        page.locator("a", has_text="ledger.py").first.click()
        text = page.inner_text("main")
        assert "File ledger.py" in text and "Ledger" in text
        visit(page.url, "file")

        # Search, keyword mode: scores, the snippet's match highlighted.
        text = visit(f"/search?q={filled.word}+total&mode=keyword", "search")
        assert "mode keyword" in text and "ledger.py" in text
        assert page.locator("td mark").count() >= 1
        scores = [float(s) for s in page.locator("tbody tr td:nth-child(2)").all_inner_texts()]
        assert scores and scores == sorted(scores, reverse=True)
        # Semantic and hybrid: hits, or the reason they cannot run (no vectors yet) on the page.
        for mode in ("semantic", "hybrid"):
            response = page.goto(f"{base}/search?q=sum+of+prices&mode={mode}")
            assert response.status in (200, 400)
            body = page.inner_text("main")
            assert re.search(r"mode (semantic|hybrid|keyword)", body) or "not available" in body \
                or "unavailable" in body, body[:400]

        # Node: the redacted capture, its mark drawn as a redaction, its metadata and path to the root.
        page.goto(f"{base}/search?q=deploy+key&mode=keyword&kind=tool_output&status=any")
        page.click("tbody tr:first-child a[href^='/node/']")
        node_url = page.url
        text = visit(node_url, "node")
        assert "deploy with key" in text and "redacted before it was stored" in text
        mark = page.locator("pre.content .redacted").first
        assert re.fullmatch(r"\[REDACTED:[\w-]+\]", mark.inner_text())
        assert mark.evaluate("e => getComputedStyle(e).backgroundColor") != "rgba(0, 0, 0, 0)"
        assert "Path to root" in text and "Metadata" in text and filled.sessions[1] in text

        # Compose: seeds from a search, a budget; the manifest and the packed text.
        text = visit(f"/compose?from={filled.word}&budget=300&format=mixed&depth=2", "compose")
        used = re.search(r"used ([\d,]+) of 300 tokens", text)
        assert used and int(used.group(1).replace(",", "")) <= 300
        assert "Included" in text and "Packed text" in text and filled.word in text
        assert page.locator("h2:text('Included') + table tbody tr").count() >= 1

        # Stats: every chart the page draws, with what this store recorded.
        text = visit("/stats", "stats")
        for heading in ("Captures per hour", "Tokens kept out of the window", "Store size over time",
                        "Walker activity", "Redaction hits by rule", "Drops by reason"):
            assert heading in text
        size_chart = page.locator("svg.chart", has_text="write-ahead log on disk")
        assert size_chart.locator("rect").count() >= 1  # the hour's sample the pruner recorded
        assert page.locator("svg.chart").count() >= 5
        saved = page.locator("svg.chart", has_text="tokens saved per tool")
        assert saved.locator("text", has_text="Bash").count() == 1  # the replaced long output
        assert page.locator("svg.chart", has_text="values redacted per rule").locator("rect").count() >= 1
        # The edited file's chunks went stale when it was read again: a status change the chart counts.
        changes = page.locator("svg.chart", has_text="status changes other than creation")
        assert changes.locator("text", has_text="live->stale").count() == 1
        drops = page.locator("svg.chart", has_text="captures not stored")
        assert drops.locator("text", has_text="capture: binary:image").count() == 1
        assert seen_hosts == {base.split("/")[2]}, f"a page fetched from elsewhere: {seen_hosts}"
        page.close()

    after = _fingerprint(filled.store)
    assert after["db"] == before["db"], "browsing changed the store file"
    # A reader in WAL mode may create an empty log when none was there (SQLite needs one to read); it writes
    # nothing to it.
    if "-wal" in before:
        assert after["-wal"] == before["-wal"], "browsing wrote to the write-ahead log"
    else:
        assert after.get("-wal", (0,))[0] == 0, "browsing wrote to the write-ahead log"
    assert len(shots) == 7 and all((artifacts / s).stat().st_size > 5000 for s in shots)
