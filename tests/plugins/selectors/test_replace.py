"""Shrinking native tool output: the real sync hook from hooks.json against a real ingest server
(in a thread over a real App), fed real tool output (pytest, rustc, node, git log, greps of this repo)."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from helpers.common import run_memtree
from helpers.replace import bash, fixture, run, serve

from memtree_core.app import App
from memtree_core.daemon import ingest, replacing
from memtree_core.hookspecs import hookimpl
from memtree_core.types import Replacement
from memtree_plugins.lib import hook_sender
from memtree_plugins.selectors import replace
from memtree_plugins.selectors.lines import marker

REPO = Path(__file__).resolve().parents[3]
BUDGET = 800


class Served:
    def __init__(self, app: App) -> None:
        self.app = app

    def nodes(self) -> list[tuple[str, str]]:
        return self.app.store.query("SELECT id, content FROM nodes ORDER BY rowid")


@pytest.fixture(params=["perl", "python"])
def served(request: pytest.FixtureRequest, home: Path, project: Path, monkeypatch: pytest.MonkeyPatch):
    """Replacement on, with the hook's sender forced to perl or python (netcat is never the sync sender).

    The cap is raised to 10 s here: these tests check what is replaced, on a machine other test runs load;
    the cap itself is tested with a server that never answers, and measured in eval/bench/replace.py."""
    app, stop, thread = serve(monkeypatch, project, sender=request.param, timeout_ms=10_000)
    lines = (app.paths.home / hook_sender.SENDER_FILE).read_text().split("\n")
    assert lines[3] == request.param, lines
    yield Served(app)
    stop.set()
    thread.join(10)
    app.close()


def updated(r: subprocess.CompletedProcess[bytes]) -> dict[str, Any]:
    assert r.returncode == 0 and r.stderr == b"", r
    out = json.loads(r.stdout)
    assert set(out) == {"hookSpecificOutput"}
    spec = out["hookSpecificOutput"]
    assert spec["hookEventName"] == "PostToolUse" and set(spec) == {"hookEventName", "updatedToolOutput"}
    return spec["updatedToolOutput"]


def same_shape(original: dict[str, Any], new: dict[str, Any]) -> None:
    """Every original field, same type; nothing added (Claude Code drops a replacement of another shape)."""
    assert set(new) == set(original)
    for key, value in original.items():
        assert type(new[key]) is type(value), key
        if isinstance(value, list):
            assert all(isinstance(v, str) for v in new[key])


def window(app: App, out: dict[str, Any], fields: tuple[str, ...]) -> int:
    return sum(app.count_tokens("\n".join(out[f]) if isinstance(out[f], list) else out[f]) for f in fields)


def settled(app: App) -> dict[str, int]:
    """The replace: counters once the server has counted (it does so after the hook got its answer)."""
    for _ in range(100):
        c = app.store.counters("replace:")
        if c:
            return c
        time.sleep(0.05)
    return {}


def node_id_of(text: str) -> str:
    m = re.search(r'"node_id": "([0-9A-Z]+)"', text)
    assert m, text
    return m.group(1)


def page_all(app: App, node_id: str) -> str:
    get = app.plugins.tools["get"].build(app)
    parts, offset = [], 0
    while True:
        page = get(node_id, offset, 400)
        parts.append(page.content)
        if page.done:
            return "".join(parts)
        offset = page.next_offset


# -- real outputs -------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def pytest_output(tmp_path_factory: pytest.TempPathFactory) -> str:
    d = tmp_path_factory.mktemp("pyproj")
    (d / "test_many.py").write_text(
        "import pytest\n\n"
        "@pytest.mark.parametrize('n', range(400))\n"
        "def test_ok(n):\n    assert n >= 0\n\n"
        "def test_cart_total():\n    total = sum([1, 2])\n    assert total == 4, 'cart total is off'\n\n"
        "def test_parse_header():\n    raise KeyError('content-type')\n")
    r = subprocess.run([sys.executable, "-m", "pytest", "-v", "-p", "no:cacheprovider", str(d)], cwd=d,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 1 and "2 failed, 400 passed" in r.stdout
    return r.stdout


def test_a_long_failing_pytest_run_is_cut_to_the_budget_keeping_every_failure(served: Served, project: Path,
                                                                             pytest_output: str) -> None:
    p = bash("python -m pytest -v", pytest_output)
    out = updated(run("replace", p, project))
    same_shape(p["tool_response"], out)
    app = served.app
    assert window(app, out, ("stdout", "stderr")) <= BUDGET
    for line in ("FAILED test_many.py::test_cart_total", "FAILED test_many.py::test_parse_header",
                 "E       AssertionError: cart total is off", "E       KeyError: 'content-type'",
                 "2 failed, 400 passed"):
        assert line in out["stdout"], line
    # Nothing stored twice, and the footer's node pages back the whole output through `get`.
    (row,) = served.nodes()
    node_id = node_id_of(out["stdout"])
    assert row[0] == node_id
    assert page_all(app, node_id) == app.redact(pytest_output)[0] == row[1]
    assert out["interrupted"] is False and out["isImage"] is False and out["noOutputExpected"] is False


def test_the_async_capture_of_the_same_call_is_deduplicated(served: Served, project: Path,
                                                             pytest_output: str) -> None:
    p = bash("python -m pytest -v", pytest_output, tool_use_id="toolu_dedupe")
    results: dict[str, subprocess.CompletedProcess[bytes]] = {}
    threads = [threading.Thread(target=lambda k=k: results.__setitem__(k, run(k, p, project)))
               for k in ("capture", "replace")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert results["capture"].stdout == b""
    out = updated(results["replace"])
    (row,) = served.nodes()
    assert node_id_of(out["stdout"]) == row[0]
    assert served.app.store.counters("capture:") == {"capture:accepted:Bash": 1, "capture:deduplicated": 1}
    # The capture hook alone, later (Claude Code runs hooks in parallel; either may come first).
    assert run("capture", p, project).stdout == b""
    assert len(served.nodes()) == 1


def test_under_threshold_passes_untouched_and_is_stored_once(served: Served, project: Path) -> None:
    p = fixture("post-bash.json")
    r = run("replace", p, project)
    assert (r.returncode, r.stdout, r.stderr) == (0, b"", b"")
    assert run("capture", p, project).returncode == 0
    assert len(served.nodes()) == 1
    c = settled(served.app)
    assert c == {"replace:untouched:under-threshold": 1}  # no savings claimed for an untouched output


def test_accounting_counts_replaced_outputs_with_the_budget_counter(served: Served, project: Path,
                                                                    pytest_output: str) -> None:
    p = bash("python -m pytest -v", pytest_output)
    out = updated(run("replace", p, project))
    app = served.app
    original = app.count_tokens(pytest_output)
    shown = window(app, out, ("stdout", "stderr"))
    c = settled(app)
    sid = p["session_id"]
    assert c == {"replace:outputs:Bash": 1, "replace:original_tokens:Bash": original,
                 "replace:window_tokens:Bash": shown, "replace:saved_tokens:Bash": original - shown,
                 f"replace:session:{sid}:outputs": 1, f"replace:session:{sid}:saved_tokens": original - shown}
    assert (original - shown) / original >= 0.9
    r = run_memtree("stats", cwd=app.identity.root)
    assert r.returncode == 0 and "tokens kept out of the window" in r.stdout
    assert f"saved={original - shown}" in r.stdout and sid in r.stdout
    j = json.loads(run_memtree("stats", "--json", cwd=app.identity.root).stdout)
    assert j["replace"]["tools"]["Bash"]["saved_tokens"] == original - shown


def test_stderr_and_stdout_share_the_budget(served: Served, project: Path) -> None:
    noise = "".join(f"compiling module_{i} ... ok\n" for i in range(800))
    err = "".join(f"warning: unused variable x{i}\n" for i in range(300)) + "error: linker failed: ld returned 1\n"
    p = bash("make all", noise, err)
    out = updated(run("replace", p, project))
    same_shape(p["tool_response"], out)
    assert window(served.app, out, ("stdout", "stderr")) <= BUDGET
    assert "error: linker failed: ld returned 1" in out["stderr"] and out["stdout"].startswith("compiling module_0")


def test_grep_content_keeps_numeric_fields_and_hits_from_many_files(served: Served, project: Path) -> None:
    p = fixture("post-grep-content.json")
    # Made-up hits with fixed paths, so the slice does not depend on where the checkout lies or what it holds.
    lines, files = [], set()
    for f in range(40):
        path = f"/home/dev/shop/src/pkg{f // 8}/module_{f}.py"
        files.add(path)
        for n in range(12):
            lines.append(f"{path}:{10 * n + 3}:def handler_{f}_{n}(request, retries=3, timeout=2.5):")
    p["tool_response"].update(content="\n".join(lines), numFiles=len(files), numLines=len(lines))
    p["tool_input"]["pattern"] = "def "
    out = updated(run("replace", p, project))
    same_shape(p["tool_response"], out)
    assert (out["numFiles"], out["numLines"], out["mode"]) == (len(files), len(lines), "content")
    assert window(served.app, out, ("content",)) <= BUDGET
    shown_files = {line.split(":", 1)[0] for line in out["content"].splitlines() if line.startswith("/")}
    assert len(shown_files) >= 10  # round-robin across files, not the first file's hits
    assert page_all(served.app, node_id_of(out["content"])) == "\n".join(lines)


def test_grep_file_list_stays_a_list_of_strings(served: Served, project: Path) -> None:
    p = fixture("post-grep-files.json")
    # A big file list that still fits capture.maxBytes (larger outputs are never replaced), made up so it
    # does not depend on what else lies in the checkout (.tox, node_modules...).
    names = [f"src/pkg{i // 40}/module_{i}.py" for i in range(1500)]
    p["tool_response"].update(filenames=names, numFiles=len(names))
    out = updated(run("replace", p, project))
    same_shape(p["tool_response"], out)
    assert out["numFiles"] == len(names)
    assert out["filenames"][:-1] == names[: len(out["filenames"]) - 1]  # Claude Code's order, a prefix
    assert out["filenames"][-1].startswith("[memtree:")
    assert window(served.app, out, ("filenames",)) <= BUDGET


def test_read_is_never_replaced_even_when_huge(served: Served, project: Path, monkeypatch) -> None:
    p = fixture("post-read-text.json")
    p["tool_response"]["file"]["content"] = "x = 1\n" * 50_000
    r = run("replace", p, project, env={"MEMTREE_CAPTURE__REPLACE__THRESHOLDS__READ": "10"})
    assert (r.returncode, r.stdout) == (0, b"")
    assert settled(served.app) == {"replace:untouched:tool-not-replaced": 1}
    # Even with a Read threshold in the daemon's own settings.
    monkeypatch.setenv("MEMTREE_CAPTURE__REPLACE__THRESHOLDS__READ", "10")
    app = App.open(project)
    assert replace.build(app, p, "some-id").output is None
    app.close()


def test_a_secret_never_reaches_the_slice_or_the_store(served: Served, project: Path) -> None:
    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    text = "".join(f"line {i}\n" for i in range(3000)) + f"error: push rejected for token {token}\n"
    out = updated(run("replace", bash("git push", text), project))
    assert served.app.plugins.redaction_rules
    assert token not in out["stdout"] and "error: push rejected" in out["stdout"]
    assert token not in served.nodes()[0][1]


# -- never worse than no memtree --------------------------------------------------------------------------
def hook_passes_without_asking(app: App, project: Path, output: str) -> None:
    """The real hook exits at once, printing and storing nothing: it never connected to ask."""
    r = run("replace", bash("pytest", output), project)
    assert (r.returncode, r.stdout, r.stderr) == (0, b"", b"")
    assert app.store.query("SELECT count(*) FROM nodes") == [(0,)]


def test_disabled_exits_at_once_printing_nothing_and_sending_nothing(home: Path, project: Path,
                                                                     monkeypatch, pytest_output: str) -> None:
    app, stop, thread = serve(monkeypatch, project, enabled=False)
    try:
        assert not replacing.flag_path(app.paths.home, app.identity.root).exists()
        hook_passes_without_asking(app, project, pytest_output)
    finally:
        stop.set()
        thread.join(10)
        app.close()


def test_server_down_or_never_answering_leaves_the_output_untouched(home: Path, project: Path, monkeypatch,
                                                                    pytest_output: str) -> None:
    app, stop, thread = serve(monkeypatch, project)
    stop.set()
    thread.join(10)
    flag = replacing.flag_path(app.paths.home, app.identity.root)
    flag.write_text("150\n")  # the daemon is gone, its flag stays
    p = bash("pytest", pytest_output)
    for sender in ("perl", "python"):
        r = run("replace", p, project, env={"MEMTREE_HOOK_SENDER": sender})
        assert (r.returncode, r.stdout, r.stderr) == (0, b"", b"")
    # A listener that accepts and never answers: the hook gives up at its cap, silently, exit 0.
    path = app.paths.ingest_socket
    path.unlink(missing_ok=True)
    mute = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    mute.bind(str(path))
    mute.listen(8)
    held: list[socket.socket] = []
    threading.Thread(target=lambda: [held.append(mute.accept()[0]) for _ in range(2)], daemon=True).start()
    try:
        for sender in ("perl", "python"):
            t0 = time.monotonic()
            r = run("replace", p, project, env={"MEMTREE_HOOK_SENDER": sender})
            assert (r.returncode, r.stdout, r.stderr) == (0, b"", b"")
            assert time.monotonic() - t0 < 5  # the hooks.json timeout would otherwise be hit
    finally:
        mute.close()
        for c in held:
            c.close()
    assert hook_sender.drop_counts(home) == {}  # the sync hook logs nothing: the async one does that
    app.close()


# -- selectors ---------------------------------------------------------------------------------------------
def budget_ok(app: App, text: str, budget: int) -> None:
    assert app.count_tokens(text) <= budget, (app.count_tokens(text), budget)


@pytest.mark.parametrize("budget", [60, 200, 800])
def test_every_selector_holds_the_budget_on_real_output(app: App, budget: int, pytest_output: str) -> None:
    log = subprocess.run(["git", "log", "-n", "60", "--stat"], cwd=REPO, capture_output=True, text=True).stdout
    minified = "x" * 200_000 + "\n" + "y" * 5000
    for selector in app.plugins.selectors:
        for text in (pytest_output, log, minified, "\n" * 5000, "ünïcödé 漢字 " * 20_000):
            out = selector.select(text, budget, app.count_tokens)
            budget_ok(app, out, budget)


def test_pytest_selector_keeps_failures(app: App, pytest_output: str) -> None:
    sel = replace.selector_for(app, "Bash", "cd x && python -m pytest -q tests")
    assert sel.name == "pytest"
    out = sel.select(pytest_output, 300, app.count_tokens)
    assert "FAILED test_many.py::test_cart_total" in out and "2 failed, 400 passed" in out


def test_cargo_selector_keeps_the_error_blocks(app: App, tmp_path: Path) -> None:
    src = tmp_path / "main.rs"
    body = "".join(f"    let v{i}: u32 = {i};\n    println!(\"{{}}\", v{i});\n" for i in range(300))
    src.write_text(f"fn main() {{\n{body}    let broken: u32 = \"text\";\n    undefined_fn();\n}}\n")
    r = subprocess.run(["rustc", "--edition", "2021", "-o", str(tmp_path / "m"), str(src)], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode != 0
    text = "".join(f"   Compiling dep{i} v0.1.{i}\n" for i in range(400)) + r.stderr
    sel = replace.selector_for(app, "Bash", "cargo build")
    assert sel.name == "cargo"
    out = sel.select(text, 300, app.count_tokens)
    budget_ok(app, out, 300)
    assert "error[E0308]: mismatched types" in out and "error[E0425]" in out and "error: aborting" in out


def test_node_selector_keeps_the_thrown_error(app: App, tmp_path: Path) -> None:
    script = tmp_path / "t.js"
    script.write_text("for (let i = 0; i < 2000; i++) console.log(`step ${i} ok`);\n"
                      "function parse(s) { throw new TypeError('cannot read config: ' + s); }\nparse('app.json');\n")
    r = subprocess.run(["node", str(script)], capture_output=True, text=True, timeout=60)
    assert r.returncode != 0
    sel = replace.selector_for(app, "Bash", "node t.js")
    assert sel.name == "node"
    out = sel.select(r.stdout + r.stderr, 250, app.count_tokens)
    budget_ok(app, out, 250)
    assert "TypeError: cannot read config: app.json" in out and "at parse" in out


def test_git_log_selector_lists_commits_not_the_first_three(app: App) -> None:
    log = subprocess.run(["git", "log", "-n", "40"], cwd=REPO, capture_output=True, text=True).stdout
    sel = replace.selector_for(app, "Bash", "git log -n 40")
    assert sel.name == "git-log"
    out = sel.select(log, 600, app.count_tokens)
    budget_ok(app, out, 600)
    hashes = re.findall(r"^commit ([0-9a-f]{40})", log, re.M)
    assert sum(h[:12] in out for h in hashes) >= min(len(hashes), 12)  # ~42 estimated tokens a line


def test_generic_selector_keeps_error_lines_head_and_tail(app: App) -> None:
    text = ("$ make\n" + "".join(f"cc -c src/file{i}.c\n" for i in range(3000))
            + "src/file1234.c:88: undefined reference to `frobnicate'\n"
            + "".join(f"cc -c src/more{i}.c\n" for i in range(3000)) + "make: *** [all] Error 2\n")
    sel = replace.selector_for(app, "Bash", "make")
    assert sel.name == "generic"
    out = sel.select(text, 200, app.count_tokens)
    budget_ok(app, out, 200)
    assert out.startswith("$ make\n") and "undefined reference to `frobnicate'" in out
    assert out.rstrip().endswith("make: *** [all] Error 2") and marker(1)[:3] in out


class LoudSelector:
    name = "loud"
    priority = 50

    def matches(self, tool: str, command: str) -> bool:
        return command.startswith("loud")

    def select(self, text: str, budget_tokens: int, count) -> str:
        return "LOUD " * 10_000  # over any budget: memtree must fall back, not overflow


class LoudPlugin:
    @hookimpl
    def memtree_register_selectors(self, register) -> None:
        register(LoudSelector())


def test_a_plugin_selector_wins_by_priority_and_cannot_overflow(home: Path, project: Path) -> None:
    app = App.open(project, extra=[("loud", LoudPlugin())])
    assert replace.selector_for(app, "Bash", "loud thing").name == "loud"
    assert replace.selector_for(app, "Bash", "pytest").name == "pytest"
    text = "".join(f"row {i}\n" for i in range(5000)) + "fatal: it broke\n"
    out = replace.cut(app, replace.selectors_for(app, "Bash", "loud thing"), text, 200)
    budget_ok(app, out, 200)
    assert "fatal: it broke" in out
    app.close()


def test_with_the_selectors_plugin_disabled_nothing_is_replaced(home: Path, project: Path) -> None:
    text = "".join(f"row {i}\n" for i in range(5000)) + "fatal: it broke\n"
    payload = bash("make", text)
    for disabled, replaced in (("", True), ("selectors", False)):
        app = App.open(project, {**os.environ, "MEMTREE_CAPTURE__REPLACE__ENABLED": "true",
                                 "MEMTREE_DISABLE_PLUGINS": disabled})
        try:
            assert (replace.selector_for(app, "Bash", "make") is None) is not replaced
            outcome = replace.build(app, payload, "some-id")
        finally:
            app.close()
        assert (outcome.output is not None) is replaced, (disabled, outcome.reason)
        if not replaced:
            assert outcome.reason == "no-selector"


def test_with_the_selectors_plugin_disabled_replacing_is_off_and_its_keys_are_ignored(
        home: Path, project: Path, monkeypatch: pytest.MonkeyPatch, pytest_output: str) -> None:
    """``capture.replace`` is the selectors plugin's setting: with that plugin disabled the user's keys are
    ignored with a warning (not an error), the hook finds no flag (a stale one is cleared) and never asks."""
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.json").write_text(json.dumps({"capture": {"replace": {"enabled": True}}}))
    monkeypatch.setenv("MEMTREE_CAPTURE__REPLACE__TIMEOUT_MS", "10000")
    monkeypatch.setenv("MEMTREE_DISABLE_PLUGINS", "selectors")
    app = App.open(project)
    flag = replacing.flag_path(app.paths.home, app.identity.root)
    flag.parent.mkdir(parents=True, exist_ok=True)
    flag.write_text("10000\n")  # left by an earlier daemon that had replacement on
    said = "\n".join(app.loaded.warnings)
    assert "capture.replace ignored: it is plugin 'selectors''s setting" in said, said
    assert "CAPTURE.REPLACE.TIMEOUT_MS ignored: it is plugin 'selectors''s setting" in said, said
    sock = ingest.bind(app.paths, app.identity.root)
    stop = threading.Event()
    thread = threading.Thread(target=ingest.serve, args=(sock, app, stop), daemon=True)
    thread.start()
    try:
        for _ in range(200):  # the capture plugin writes the sender once the host has set the flag up
            if (app.paths.home / hook_sender.SENDER_FILE).exists():
                break
            time.sleep(0.05)
        assert not flag.exists()
        hook_passes_without_asking(app, project, pytest_output)
    finally:
        stop.set()
        thread.join(10)
        app.close()


def test_a_long_stdout_cannot_starve_the_stderr_holding_the_error(home: Path, project: Path, tmp_path: Path,
                                                                   monkeypatch) -> None:
    script = tmp_path / "t.js"
    script.write_text("for (let i = 0; i < 1500; i++) console.log(`migrating record ${i} ok`);\n"
                      "function load(s) { throw new TypeError('cannot read config: ' + s); }\nload('app.json');\n")
    r = subprocess.run(["node", str(script)], capture_output=True, text=True, timeout=60)
    monkeypatch.setenv("MEMTREE_CAPTURE__REPLACE__ENABLED", "true")
    app = App.open(project)
    outcome = replace.build(app, bash("node t.js", r.stdout, r.stderr), "01TESTNODE")
    assert outcome.output is not None
    out = outcome.output["hookSpecificOutput"]["updatedToolOutput"]
    assert "TypeError: cannot read config: app.json" in out["stderr"]
    assert window(app, out, ("stdout", "stderr")) <= BUDGET
    app.close()


# -- the output-replacer hook ---------------------------------------------------------------------------------
class MakeSummary:
    """A third-party replacer: a one-line answer for `make`, nothing for anything else."""

    name = "make-summary"

    def __init__(self) -> None:
        self.delivered_to: list[str] = []

    def replace(self, app, payload, node_id, *, truncated=False):
        if payload["tool_input"].get("command") != "make":
            return Replacement(None, "not-make")
        response = {**payload["tool_response"], "stdout": f"make: {node_id} holds the whole log\n"}
        return Replacement({"hookSpecificOutput": {"hookEventName": "PostToolUse",
                                                   "updatedToolOutput": response}}, "replaced")

    def delivered(self, app, outcome):
        self.delivered_to.append(outcome.reason)


class Exploding:
    name = "exploding"

    def replace(self, app, payload, node_id, *, truncated=False):
        raise RuntimeError("boom")

    def delivered(self, app, outcome):
        raise AssertionError("never delivered")


class ReplacerPlugin:
    def __init__(self, *replacers) -> None:
        self.replacers = replacers

    @hookimpl
    def memtree_register_output_replacers(self, register) -> None:
        for replacer in self.replacers:
            register(replacer)


def test_a_plugin_replacer_answers_first_and_the_builtin_slice_takes_the_rest(
        home: Path, project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    mine = MakeSummary()
    app, stop, thread = serve(monkeypatch, project, sender="perl", timeout_ms=10_000,
                              extra=[("acme", ReplacerPlugin(Exploding(), mine))])
    try:
        assert app.plugins.output_replacers.names() == ["exploding", "make-summary", "slice"]
        text = "".join(f"row {i}\n" for i in range(5000)) + "fatal: it broke\n"
        out = updated(run("replace", bash("make", text), project))
        assert out["stdout"].startswith("make: ") and out["stdout"].endswith(" holds the whole log\n")
        for _ in range(100):  # counted after the hook got its answer
            if mine.delivered_to:
                break
            time.sleep(0.05)
        assert mine.delivered_to == ["replaced"]
        out = updated(run("replace", bash("ninja", text, tool_use_id="toolu_test2"), project))
        assert "fatal: it broke" in out["stdout"] and "[memtree: output cut" in out["stdout"]  # the built-in
    finally:
        stop.set()
        thread.join(10)
        app.close()
