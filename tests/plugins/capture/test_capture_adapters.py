"""The capture-adapter hook: a plugin's adapter for another tool, one replacing a built-in, and a broken one,
through a real App, the real ingest server and a real store (redaction and command policies still apply)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from memtree_core.app import App
from memtree_core.daemon.ingest import IngestServer, Refused
from memtree_core.hookspecs import hookimpl
from memtree_core.types import Capture, Dropped

FIXTURES = Path(__file__).resolve().parents[2] / "data" / "claude-code-payloads"
TOKEN = "ghp_" + "R8x2Lq9ZtW4vKp7YmN3sJd6Hf1Cb5Ga0Ue2X"  # a GitHub token shape the built-in rules know


def webfetch(content: str, url: str = "https://docs.example.org/retry.html", **extra: object) -> dict:
    return {"hook_event_name": "PostToolUse", "tool_name": "WebFetch", "session_id": "s1",
            "tool_use_id": f"toolu_{abs(hash((content, url)))}", "cwd": "/w",
            "tool_input": {"url": url, "prompt": "summarise"},
            "tool_response": {"result": content, "url": url, "code": 200}, **extra}


class WebFetchAdapter:
    name = "webfetch"
    tools = ("WebFetch",)

    def captures(self, payload, *, max_bytes):
        response = payload.get("tool_response") or {}
        text = response.get("result")
        if not isinstance(text, str) or not text.strip():
            return Dropped("empty")
        meta = {"tool": payload["tool_name"], "tool_use_id": payload.get("tool_use_id"),
                "url": payload["tool_input"]["url"]}
        return [Capture("tool_output", text, source_uri=payload["tool_input"]["url"], metadata=meta)]


class UpperBash:
    """Replaces the built-in ``bash`` adapter (its captures are recognisable)."""

    name = "bash"
    tools = ("Bash",)

    def captures(self, payload, *, max_bytes):
        out = payload["tool_response"]["stdout"]
        return [Capture("tool_output", out.upper(), metadata={"tool": "Bash", "command": "x"})]


class Broken:
    name = "broken"
    tools = ("Glob",)

    def captures(self, payload, *, max_bytes):
        raise KeyError("filenames")


class Liar:
    name = "liar"
    tools = ("Task",)

    def captures(self, payload, *, max_bytes):
        return ["not a capture"]


class Nested:
    """Metadata the host could not redact (a nested object): refused whole."""

    name = "nested"
    tools = ("TodoWrite",)

    def captures(self, payload, *, max_bytes):
        return [Capture("tool_output", "todo list", metadata={"tool": "TodoWrite", "todos": [{"secret": TOKEN}]})]


class AdapterPlugin:
    def __init__(self, *adapters, replaces=False):
        self.adapters, self.replaces = adapters, replaces

    @hookimpl
    def memtree_register_capture_adapters(self, register):
        for adapter in self.adapters:
            register(adapter, replaces=self.replaces)


@pytest.fixture
def served(home: Path, project: Path):
    app = App.open(project, extra=[("acme", AdapterPlugin(WebFetchAdapter(), Broken(), Liar(), Nested()))])
    yield IngestServer(app)
    app.close()


def test_a_plugin_adapter_captures_another_tool_redacted(served: IngestServer) -> None:
    app = served.app
    assert app.plugins.capture_adapters.names() == ["webfetch", "broken", "liar", "nested", "read", "grep",
                                                           "bash"]
    ids, _ = served.ingest_once(webfetch(f"Retry with backoff.\nexport GITHUB_TOKEN={TOKEN}\n"))
    (node,) = app.store.get_nodes(ids).values()
    assert (node.kind, node.status, node.source_uri) == ("tool_output", "pending",
                                                         "https://docs.example.org/retry.html")
    assert "Retry with backoff." in node.content and TOKEN not in node.content and "[REDACTED:" in node.content
    assert node.meta["tool"] == "WebFetch" and node.meta["url"].endswith("retry.html")
    assert app.store.counters("capture:accepted:") == {"capture:accepted:WebFetch": 1}


def test_a_token_in_a_plugin_captures_url_is_redacted(served: IngestServer) -> None:
    url = f"https://api.example.org/v1/report?access_token={TOKEN}"
    ids, _ = served.ingest_once(webfetch("The weekly report.", url=url))
    (node,) = served.app.store.get_nodes(ids).values()
    assert TOKEN not in (node.source_uri or "") and TOKEN not in node.metadata
    assert node.source_uri.startswith("https://api.example.org/v1/report?access_token=[REDACTED:")


def test_the_builtin_adapters_still_capture_their_tools(served: IngestServer) -> None:
    payload = json.loads((FIXTURES / "post-bash.json").read_text())
    ids, _ = served.ingest_once(payload)
    (node,) = served.app.store.get_nodes(ids).values()
    assert node.meta["tool"] == "Bash" and node.content == payload["tool_response"]["stdout"]


@pytest.mark.parametrize(("tool", "reason"), [("Glob", "bad-shape:KeyError"), ("Task", "bad-shape:adapter"),
                                              ("TodoWrite", "bad-shape:adapter"), ("NotebookEdit", "unknown-tool")])
def test_a_failing_or_missing_adapter_is_a_counted_drop(served: IngestServer, tool: str, reason: str) -> None:
    payload = {**webfetch("some text"), "tool_name": tool}
    with pytest.raises(Refused, match=reason):
        served.ingest_once(payload)
    assert not served.app.store.query("SELECT id FROM nodes")


def test_an_adapter_can_replace_a_builtin_and_disabling_capture_drops_every_tool(home: Path,
                                                                               project: Path) -> None:
    payload = json.loads((FIXTURES / "post-bash.json").read_text())
    app = App.open(project, extra=[("upper", AdapterPlugin(UpperBash(), replaces=True))])
    try:
        assert app.plugins.capture_adapters.entry("bash").plugin == "upper"
        ids, _ = IngestServer(app).ingest_once(payload)
        (node,) = app.store.get_nodes(ids).values()
        assert node.content == payload["tool_response"]["stdout"].upper()
    finally:
        app.close()
    app = App.open(project, environ={**os.environ, "MEMTREE_DISABLE_PLUGINS": "capture"})
    try:
        with pytest.raises(Refused, match="unknown-tool"):
            IngestServer(app).ingest_once({**payload, "tool_use_id": "toolu_other"})
    finally:
        app.close()


class LockfileGuard:
    """A third-party capture pipeline step: never store a Read of a lock file, defer everything else."""

    def __init__(self) -> None:
        self.asked = 0

    @hookimpl(tryfirst=True)
    def memtree_prepare_capture(self, app, payload):
        self.asked += 1
        path = (payload.get("tool_input") or {}).get("file_path") or ""
        if path.endswith(".lock"):
            raise Refused("lockfile")
        return None  # the built-in pipeline (adapters, policies, redaction) does the rest


def test_a_plugin_can_take_part_in_the_capture_pipeline_and_the_gate_comes_first(home: Path,
                                                                                  project: Path) -> None:
    read = json.loads((FIXTURES / "post-read-text.json").read_text())
    guard = LockfileGuard()
    app = App.open(project, extra=[("guard", guard)])
    try:
        with pytest.raises(Refused, match="lockfile"):
            IngestServer(app).ingest_once({**read, "tool_input": {**read["tool_input"], "file_path": "/w/uv.lock"}})
        bash = json.loads((FIXTURES / "post-bash.json").read_text())
        ids, _ = IngestServer(app).ingest_once(bash)  # deferred: stored by the built-in pipeline
        assert [n.meta["tool"] for n in app.store.get_nodes(ids).values()] == ["Bash"]
        assert guard.asked == 2
    finally:
        app.close()
    # Redaction unavailable: refused before any plugin's pipeline sees the payload.
    guard = LockfileGuard()
    app = App.open(project, environ={**os.environ, "MEMTREE_DISABLE_PLUGINS": "redaction"},
                   extra=[("guard", guard)])
    try:
        before = app.store.query("SELECT id FROM nodes")
        with pytest.raises(Refused, match="redaction-unavailable"):
            IngestServer(app).ingest_once({**read, "tool_use_id": "toolu_gate"})
        assert guard.asked == 0 and app.store.query("SELECT id FROM nodes") == before
    finally:
        app.close()


class ParentedStore:
    """A third-party ``memtree_store_capture``: each Bash capture is stored under one session node of its own
    (what a plugin grouping captures by session would do); everything else is left to the built-in."""

    def __init__(self) -> None:
        self.parent: str | None = None

    @hookimpl(tryfirst=True)
    def memtree_store_capture(self, app, payload, prepared, replayed):
        if payload.get("tool_name") != "Bash":
            return None
        with app.store.tx():
            if self.parent is None:
                self.parent = app.store.insert_node("tool_output", "session s1", status_="pending").id
            return [app.store.insert_node(c.kind, c.content, parent_id=self.parent, metadata=c.metadata).id
                    for c in prepared.captures]


def test_a_plugin_can_store_captures_its_own_way_and_sees_them_redacted(home: Path, project: Path) -> None:
    bash = json.loads((FIXTURES / "post-bash.json").read_text())
    bash["tool_response"]["stdout"] += f"export GITHUB_TOKEN={TOKEN}\n"
    read = json.loads((FIXTURES / "post-read-text.json").read_text())
    plugin = ParentedStore()
    app = App.open(project, extra=[("sessions", plugin)])
    try:
        ids, _ = IngestServer(app).ingest_once(bash)
        (node,) = app.store.get_nodes(ids).values()
        assert node.parent_id == plugin.parent and TOKEN not in node.content and "[REDACTED:" in node.content
        ids, _ = IngestServer(app).ingest_once(read)  # deferred: the built-in stores it, parentless
        (node,) = app.store.get_nodes(ids).values()
        assert node.parent_id is None and node.meta["tool"] == "Read"
    finally:
        app.close()


class OwnPipeline:
    """A third-party pipeline that prepares every payload itself (the built-in ``capture`` plugin disabled)."""

    @hookimpl
    def memtree_prepare_capture(self, app, payload):
        from memtree_core.types import PreparedCapture

        return PreparedCapture([Capture("tool_output", "prepared elsewhere", metadata={"tool": "Bash"})])


def test_with_nobody_to_store_a_prepared_capture_it_is_a_counted_drop(home: Path, project: Path) -> None:
    payload = json.loads((FIXTURES / "post-bash.json").read_text())
    app = App.open(project, environ={**os.environ, "MEMTREE_DISABLE_PLUGINS": "capture"},
                   extra=[("own", OwnPipeline())])
    try:
        server = IngestServer(app)
        with pytest.raises(Refused, match="not-stored"):
            server.ingest_once(payload)
        assert not app.store.query("SELECT id FROM nodes")
    finally:
        app.close()
