"""Where redaction runs and what a read gives back, and environment dumps recognised by what
the output is: real files, the real store, real subprocesses and the real ingest socket.

What is checked is the store's own bytes (``store.db`` and its ``-wal``), not only what a query returns.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import random
import re
import shutil
import threading
from pathlib import Path

import anyio
import pytest
from helpers.common import ingest_ack
from helpers.daemon import mcp_session, project_paths, run_async, text_of

from memtree_core.app import App
from memtree_core.daemon import ingest
from memtree_core.daemon.redacting import realign
from memtree_plugins.lib.ripgrep import find_rg

rng = random.Random(1212)  # every secret here is made up, from this seeded generator


@pytest.fixture(autouse=True)
def _same_draws_in_any_order() -> None:
    """Each test draws from rng as if it ran first: pytest-randomly and xdist change the order."""
    rng.seed(1212)

KEY_FIRST, KEY_LAST = 187, 237  # the private key's lines in the test file


def tool(app, name):
    return app.plugins.tools[name].build(app)


def store_bytes(app) -> bytes:
    path = Path(app.paths.store)
    return b"".join(p.read_bytes() for p in (path, Path(f"{path}-wal")) if p.exists())


def key_file() -> tuple[str, list[str]]:
    """A file with a PEM private key at lines 187-237, and the key's body lines."""
    body = [base64.b64encode(rng.randbytes(48)).decode() for _ in range(KEY_LAST - KEY_FIRST - 1)]
    lines = [f"setting_{i} = {i}\n" for i in range(1, KEY_FIRST)]
    lines += ["-----BEGIN RSA PRIVATE KEY-----\n"] + [b + "\n" for b in body] + ["-----END RSA PRIVATE KEY-----\n"]
    lines += [f"after_{i} = {i}\n" for i in range(KEY_LAST + 1, 520)]
    return "".join(lines), body


def leaked(data: bytes, secrets: list[str]) -> list[str]:
    """The secrets found in ``data``, also as the lower-cased word pieces an FTS index keeps."""
    low = data.lower()
    out = []
    for s in secrets:
        pieces = [p for p in re.split(r"[^A-Za-z0-9]+", s) if len(p) >= 12]
        if s.encode() in data or any(p.lower().encode() in low for p in pieces):
            out.append(s)
    return out


# -- the line-keeping redaction itself ---------------------------------------------------------------------
def test_realign_puts_folded_lines_back_after_the_marker() -> None:
    before = 'a\nKEY = """-----BEGIN\nx\ny\n-----END"""\nb\n'
    after = 'a\nKEY = """[REDACTED:private-key]"""\nb\n'
    text, regions = realign(before, after)
    assert text.count("\n") == before.count("\n")
    assert text.split("\n")[1] == 'KEY = """[REDACTED:private-key]' and text.split("\n")[4] == '"""'
    assert text.split("\n")[5] == "b" and regions == [(1, 5, 1, 5)]


def test_two_keys_keep_every_line_number(app, project: Path) -> None:
    text, body = key_file()
    second = [base64.b64encode(rng.randbytes(48)).decode() for _ in range(5)]
    text += "-----BEGIN EC PRIVATE KEY-----\n" + "".join(b + "\n" for b in second) + "-----END EC PRIVATE KEY-----\n"
    text += "tail = 1\n"
    done = app.redact_lines(text)
    assert done.text.count("\n") == text.count("\n")
    assert done.text.split("\n")[-2] == "tail = 1" and done.text.split("\n")[KEY_LAST] == "after_238 = 238"
    assert sorted(n for n, r in done.lines.items() if "private-key" in r) == [KEY_FIRST, 520]
    assert not leaked(done.text.encode(), body + second)


# -- read -----------------------------------------------------------------------------------------------------
def test_key_split_across_chunks_stores_no_key_line_and_says_where(app, project: Path) -> None:
    text, body = key_file()
    (project / "deploy.cfg").write_text(text)
    r = tool(app, "read")("deploy.cfg", budget_tokens=60_000)
    spans = [tuple(map(int, c.lines.split("-"))) for c in r.chunks]
    assert any(a <= KEY_FIRST <= b < KEY_LAST for a, b in spans), "the key must straddle two chunks"
    assert not leaked(store_bytes(app), body) and not leaked(r.render().encode(), body)
    # Line numbers are the file's: the lines after the key read as they do on disk.
    assert r.total_lines == text.count("\n")
    assert r.content.split("\n")[KEY_LAST] == text.split("\n")[KEY_LAST] == "after_238 = 238"
    assert r.redacted.startswith(f"memtree redacted 1 value: lines {KEY_FIRST}-{KEY_LAST} (private-key)")
    assert f"note: {r.redacted}" in r.render() and "the file on disk is unchanged" in r.redacted
    # A range after the key has no note; one inside it names the lines it holds.
    assert tool(app, "read")("deploy.cfg", lines="300-310").redacted == ""
    inside = tool(app, "read")("deploy.cfg", lines="200-205").redacted
    assert "lines 200-205 (private-key)" in inside


def test_read_note_names_each_line_and_rule(app, project: Path) -> None:
    key_id = "AKIA" + "".join(rng.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567") for _ in range(16))
    lines = [f"# line {i}\n" for i in range(1, 14)]
    lines += [f'AWS_ACCESS_KEY_ID = "{key_id}"\n', 'DB_PASSWORD = "Kq2-' + "".join(rng.choices("xyzw0123", k=10))
              + '"\n', "done = True\n"]
    (project / "settings.py").write_text("".join(lines))
    r = tool(app, "read")("settings.py")
    assert re.match(r"memtree redacted 2 values: line 14 \([\w-]+\), line 15 \([\w-]+\); ", r.redacted), r.redacted
    assert key_id not in r.render() and r.render().rstrip().endswith("is unchanged")


def test_get_page_of_a_redacted_chunk_says_so(app, project: Path) -> None:
    text, body = key_file()
    (project / "deploy.cfg").write_text(text)
    r = tool(app, "read")("deploy.cfg", budget_tokens=60_000)
    first, second = r.chunks[0], r.chunks[1]
    page = tool(app, "get")(first.id, budget_tokens=60_000)
    assert page.redacted.startswith(f"memtree redacted 1 value: lines {KEY_FIRST}-{first.lines.split('-')[1]} ")
    assert "(private-key)" in page.redacted and f"note: {page.redacted}" in page.render()
    # The chunk that holds only the rest of the key (blank lines now) says what they were.
    rest = tool(app, "get")(second.id, budget_tokens=60_000).redacted
    assert f"covers lines {int(second.lines.split('-')[0])}-{KEY_LAST} (private-key)" in rest
    clean_chunk = next(c for c in r.chunks if int(c.lines.split("-")[0]) > KEY_LAST)
    assert tool(app, "get")(clean_chunk.id, budget_tokens=60_000).redacted == ""


LIBRARY_FILES = ["json/decoder.py", "textwrap.py", "pluggy/_hooks.py", "pluggy/_manager.py"]


@pytest.mark.parametrize("name", LIBRARY_FILES)
def test_read_of_a_clean_library_file_is_byte_identical(app, project: Path, name: str) -> None:
    import importlib

    module = name.removesuffix(".py").replace("/", ".")
    source = Path(importlib.import_module(module).__file__)  # type: ignore[arg-type]
    data = source.read_bytes()
    (project / "lib.py").write_bytes(data)
    for _ in range(2):  # written, then served from the store
        r = tool(app, "read")("lib.py", budget_tokens=200_000)
        assert not r.truncated and r.redacted == ""
        assert r.content.encode() == data
        assert data.decode().rstrip("\n") in r.render()


# -- grep -----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("engine", ["rg", "python"])
def test_grep_of_key_body_lines_is_redacted(app, project: Path, engine: str, monkeypatch) -> None:
    if engine == "rg" and find_rg() is None:
        pytest.skip("no ripgrep binary")
    monkeypatch.setenv("MEMTREE_GREP_ENGINE", engine)
    text, body = key_file()
    (project / "deploy.cfg").write_text(text)
    # A pattern that matches key body lines only (never the BEGIN line).  Its prefixes are shorter than the
    # 12-character pieces `leaked` looks for: the pattern is the caller's own text, stored with the result.
    pattern = "^(" + "|".join(re.escape(b[:10]) for b in body[20:30]) + ")"
    r = tool(app, "grep")(pattern, context=2, budget_tokens=20_000)
    assert r.matches == 10 and r.hits
    assert not leaked(store_bytes(app), body) and not leaked(r.render().encode(), body)
    assert all("[REDACTED:private-key]" not in h.text or h.start_line <= KEY_FIRST for h in r.hits)


# -- bash -----------------------------------------------------------------------------------------------------
def test_bash_uri_is_no_hash_a_dictionary_can_match(app) -> None:
    password = "Summer2024!"
    command = f"DB_PASSWORD={password} true"
    r = tool(app, "bash")(command)
    assert r.stored and password not in r.render()
    (uri,) = app.store.query("SELECT source_uri FROM nodes WHERE id = ?", (r.node_id,))[0]
    digest = uri.split("#", 1)[1]
    root = str(app.identity.root)
    key = bytes.fromhex(app.store.get_meta("digest-key"))
    for guess in ["password", "letmein", "Winter2023!", "hunter2", password]:
        cmd = f"DB_PASSWORD={guess} true"
        blob = json.dumps({"command": cmd, "cwd": root}, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        for candidate in (hashlib.sha256(blob.encode()).hexdigest(), hashlib.sha256(cmd.encode()).hexdigest(),
                          hmac.new(key, blob.encode(), hashlib.sha256).hexdigest()):
            assert candidate != digest
    assert password.encode() not in store_bytes(app)
    # The same command again: the same URI (the key is the store's, made once).
    again = tool(app, "bash")(command + " ")
    (uri2,) = app.store.query("SELECT source_uri FROM nodes WHERE id = ?", (again.node_id,))[0]
    assert uri2.startswith("tool:bash#") and app.store.get_meta("digest-key") == key.hex()


# -- environment dumps through the real bash tool ------------------------------------------------------------
ENV_SECRETS = {
    "PGPASSWORD": "Vq4-lantern-" + "".join(rng.choices("abcdefgh0123456789", k=8)),
    "SENTRY_DSN": "https://" + rng.randbytes(16).hex() + "@o" + str(rng.randrange(10**6)) + ".ingest.sentry.io/4242",
    # A name no rule would call secret: only the dump's shape gives it away.
    "MT_FAITHFUL_OPAQUE": "ox7-Marrow-kettle-" + "".join(rng.choices("stuvwxyz", k=6)),
}

BYPASSES = [
    "sh -c env", "bash -c printenv", "command -p env", "x=env; $x", 'eval e""nv',
    "cat /proc/$PPID/environ", "cat /proc/thread-self/environ", "cat /proc/self//environ",
    "cd /proc/self && cat environ",
    "awk 'BEGIN { for (k in ENVIRON) print k \"=\" ENVIRON[k] }'",
    "perl -e 'print \"$_=$ENV{$_}\\n\" for sort keys %ENV'",
    "perl -e 'while (my ($k, $v) = each %ENV) { print \"$k $v\\n\" }'",
    "python3 -c 'import os; print(os.environ)'",
    "python3 -c 'import os, json; print(json.dumps(dict(os.environ), indent=2))'",
    "python3 -c 'import os; [print(k, v) for k, v in os.environ.items()]'",
    "node -e 'console.log(process.env)'",
    "node -e 'console.log(JSON.stringify(process.env))'",
    'for v in $(compgen -e); do echo "$v=${!v}"; done', 'for v in $(compgen -v); do echo "$v=${!v}"; done',
    "python3 -c 'import os; print(sorted(os.environ.items()))'",
    "export -p | cat", "declare -x | cat", "x=env; $x -0",
    "cat -n /proc/self/environ | tr '\\0' '\\n'",
]




def test_env_dump_bypasses_through_the_real_daemon_store_no_value(home: Path, project: Path, env, daemon_guard) -> None:
    """The daemon started by `memtree serve` holds the secrets in its own environment, as a user's would."""
    env = {**env, **ENV_SECRETS}
    commands = ["sh -c env", "x=env; $x", "cat /proc/thread-self/environ", "python3 -c 'import os; print(os.environ)'",
                "awk 'BEGIN { for (k in ENVIRON) print k \"=\" ENVIRON[k] }'", 'eval e""nv']
    shown: list[str] = []

    async def go() -> None:
        with anyio.fail_after(120):
            await session()

    async def session() -> None:
        async with mcp_session(project, env) as s:
            for command in commands:
                result = await s.call_tool("bash", {"command": command, "budget_tokens": 20_000})
                shown.append(text_of(result))
            await s.call_tool("grep", {"pattern": "PGPASS|SENTRY|FAITHFUL", "path": "/proc/self/environ"})

    run_async(go)
    assert len(shown) == len(commands) and all("exit 0" in t for t in shown), shown
    store = Path(project_paths(project).store)
    data = b"".join(p.read_bytes() for p in (store, Path(f"{store}-wal")) if p.exists())
    assert data, "the daemon stored nothing at all"
    for name, value in ENV_SECRETS.items():
        assert not any(value in t for t in shown), f"{name} shown"
        assert value.encode() not in data, f"{name} stored"


@pytest.mark.parametrize("command", BYPASSES)
def test_env_dump_bypass_stores_no_value(app, monkeypatch, command: str) -> None:
    program = command.split()[0]
    if program in ("perl", "node", "awk") and shutil.which(program) is None:
        pytest.skip(f"no {program} here")
    for name, value in ENV_SECRETS.items():
        monkeypatch.setenv(name, value)
    r = tool(app, "bash")(command, budget_tokens=50_000)
    assert r.exit_code == 0, r.render()[:500]
    shown = r.render()
    data = store_bytes(app)
    for name, value in ENV_SECRETS.items():
        assert value not in shown, f"{name} shown by {command!r}"
        assert value.encode() not in data, f"{name} stored by {command!r}"


def test_grep_and_read_of_environ_files_keep_names_only(app, monkeypatch) -> None:
    for name, value in ENV_SECRETS.items():
        monkeypatch.setenv(name, value)
    for spelling in ("/proc/self/environ", "/proc/self//environ", "/proc/thread-self/environ"):
        with pytest.raises(ValueError, match="does not search"):  # grep stays out of /proc altogether
            tool(app, "grep")("FAITHFUL|PGPASS|SENTRY", path=spelling, budget_tokens=20_000)
        with pytest.raises(ValueError):
            tool(app, "read")(spelling)  # a NUL-separated file is not text for read
    data = store_bytes(app)
    for value in ENV_SECRETS.values():
        assert value.encode() not in data


def test_env_dump_rule_leaves_scripts_and_code_alone(app) -> None:
    script = ("#!/bin/sh\nexport PATH=\"$HOME/bin:$PATH\"\nexport LANG=C.UTF-8\nexport EDITOR=vim\n"
              "export HOME=\"${HOME:-/root}\"\n")
    code = "import os\nhome = os.environ['HOME']\npath = os.environ.get('PATH', '')\nuser = os.environ['USER']\n"
    for text in (script, code):
        assert app.redact(text) == (text, {})


# -- hook captures ------------------------------------------------------------------------------------------
class Served:
    def __init__(self, app: App) -> None:
        self.app = app
        self.sock = ingest.bind(app.paths, app.identity.root)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=ingest.serve, args=(self.sock, app, self.stop), daemon=True)
        self.thread.start()

    def send(self, payload: dict) -> dict:
        return ingest_ack(self.app.paths.ingest_socket, payload)

    def close(self) -> None:
        self.stop.set()
        self.thread.join(10)


@pytest.fixture
def served(app):
    s = Served(app)
    yield s
    s.close()


FIXTURES = Path(__file__).resolve().parents[2] / "data" / "claude-code-payloads"


def _read_payload(path: Path, start: int, content: str) -> dict:
    payload = json.loads((FIXTURES / "post-read-text.json").read_text())
    payload["tool_input"] = {"file_path": str(path), "offset": start, "limit": content.count("\n")}
    payload["tool_response"]["file"] = {"filePath": str(path), "content": content,
                                        "numLines": content.count("\n"), "startLine": start,
                                        "totalLines": 520}
    payload["tool_use_id"] = f"toolu_{start}"
    return payload


def test_hook_read_of_a_slice_inside_a_key_stores_no_key_line(app, project: Path, served) -> None:
    text, body = key_file()
    path = project / "deploy.cfg"
    path.write_text(text)
    lines = text.splitlines(keepends=True)
    content = "".join(lines[199:300])  # lines 200-300: key body without its BEGIN line
    ack = served.send(_read_payload(path, 200, content))
    assert ack["ok"], ack
    (stored,) = app.store.query("SELECT content FROM nodes WHERE id = ?", (ack["ids"][0],))[0]
    assert stored.count("\n") == content.count("\n") and stored.endswith("after_300 = 300\n")
    assert not leaked(store_bytes(app), body)


def test_hook_read_of_an_environ_file_keeps_names_only(app, served, monkeypatch) -> None:
    for name, value in ENV_SECRETS.items():
        monkeypatch.setenv(name, value)
    content = "\n".join(f"{k}={v}" for k, v in ENV_SECRETS.items()) + "\n"
    ack = served.send(_read_payload(Path("/proc/self//environ"), 1, content))
    assert ack["ok"], ack
    (stored,) = app.store.query("SELECT content FROM nodes WHERE id = ?", (ack["ids"][0],))[0]
    assert stored == "".join(f"{k}=[REDACTED:env-dump]\n" for k in ENV_SECRETS)


def test_hook_grep_of_key_body_lines_stores_none(app, project: Path, served) -> None:
    text, body = key_file()
    path = project / "deploy.cfg"
    path.write_text(text)
    lines = text.split("\n")
    hits = [f"{path}:{n}:{lines[n - 1]}" for n in range(200, 206)] + ["--", f"{path}-300-{lines[299]}"]
    payload = json.loads((FIXTURES / "post-grep-content.json").read_text())
    payload["cwd"] = str(project)
    payload["tool_input"].update({"pattern": "^[A-Za-z0-9+/]{60}", "path": str(project)})
    payload["tool_response"].update({"content": "\n".join(hits) + "\n", "numLines": len(hits)})
    ack = served.send(payload)
    assert ack["ok"], ack
    (stored,) = app.store.query("SELECT content FROM nodes WHERE id = ?", (ack["ids"][0],))[0]
    assert not leaked(store_bytes(app), body)
    assert stored.split("\n")[0] == f"{path}:200:" and stored.split("\n")[-2] == f"{path}-300-after_300 = 300"


def test_bash_tail_that_starts_inside_a_key_keeps_none_of_it(app, tmp_path: Path) -> None:
    # 200 KB of filler, then a key far longer than the kept tail: the tail window starts in its body.
    body = [base64.b64encode(rng.randbytes(48)).decode() for _ in range(1500)]
    key = "-----BEGIN OPENSSH PRIVATE KEY-----\n" + "\n".join(body) + "\n-----END OPENSSH PRIVATE KEY-----\n"
    out = tmp_path / "out.txt"
    out.write_text("".join(f"filler line {i:06d} of the build log\n" for i in range(6000)) + key + "done\n")
    r = tool(app, "bash")(f"cat {out}", budget_tokens=5_000)
    assert r.stored and r.stdout_bytes == out.stat().st_size
    (stored,) = app.store.query("SELECT content FROM nodes WHERE id = ?", (r.node_id,))[0]
    assert "bytes omitted" in stored and stored.rstrip().endswith("done\n[exit 0]".rstrip())
    assert not leaked(store_bytes(app), body) and not leaked(r.render().encode(), body)


# -- the env-dump rule on its own, against a fixed environment --------------------------------------------------
FAKE_ENV = {"HOME": "/home/ada", "PATH": "/usr/local/bin:/usr/bin", "LANG": "en_GB.UTF-8", "SHELL": "/bin/zsh",
            "EDITOR": "nvim", "MT_REGION": "eu-" + str(rng.randrange(10**6)), "DB_PASS": "Opal-" + rng.randbytes(6).hex(),
            "ANALYTICS_ID": "ua-" + rng.randbytes(5).hex()}


def _dump_shapes(env: dict[str, str]) -> dict[str, str]:
    items = list(env.items())
    node = "{\n" + "".join(f"  {k}: '{v}',\n" for k, v in items) + "}"
    return {
        "env": "".join(f"{k}={v}\n" for k, v in items),
        "nul": "".join(f"{k}={v}\0" for k, v in items),
        "repr": "environ(" + repr(dict(items)) + ")",
        "json": json.dumps(dict(items), indent=2),
        "docker": json.dumps({"Config": {"Env": [f"{k}={v}" for k, v in items]}}, indent=4),
        "declare": "".join(f'declare -x {k}="{v}"\n' for k, v in items),
        "export": "".join(f"export {k}='{v}'\n" for k, v in items),
        "space": "".join(f"{k} {v}\n" for k, v in items),
        "cat -n": "".join(f"{i:6}\t{k}={v}\n" for i, (k, v) in enumerate(items, 1)),
        "grep -n": "".join(f"/proc/1/environ:{i}:{k}={v}\n" for i, (k, v) in enumerate(items, 1)),
        "node": node,
        "ruby": "{" + ", ".join(f'"{k}"=>"{v}"' for k, v in items) + "}",
        "tuples": repr(sorted(items)),
        "with empties": "".join(f"{k}={v}\nEMPTY_{i}=\n" for i, (k, v) in enumerate(items)),
    }


@pytest.mark.parametrize("shape", list(_dump_shapes(FAKE_ENV)))
def test_env_dump_shapes_lose_every_value_keep_every_name(shape: str) -> None:
    from memtree_plugins.redaction.envdump import EnvDumpRule

    text = _dump_shapes(FAKE_ENV)[shape]
    out, hits = EnvDumpRule(environ=FAKE_ENV).redact(text)
    assert hits >= len(FAKE_ENV) - 1
    for name, value in FAKE_ENV.items():
        assert name in out
        if len(value) > 4:  # "nvim" is also a word of the shape's own text
            assert value not in out, (shape, name)


def test_env_dump_rule_needs_this_environment() -> None:
    from memtree_plugins.redaction.envdump import EnvDumpRule

    rule = EnvDumpRule(environ=FAKE_ENV)
    foreign = "".join(f"APP_SETTING_{i}=value-{i}\n" for i in range(20))  # names this process does not have
    ci = "env:\n  HOME: /github/home\n  PATH: ${{ env.PATH }}:/opt/bin\n  LANG: C\n  SHELL: bash\n"
    config = 'HOME = os.environ["HOME"]\nPATH = os.environ.get("PATH")\nLANG = "C"\n'
    for text in (foreign, ci, config):
        assert rule.redact(text) == (text, 0)
    # Another environment's dump (a container's): common names, other values, app variables beside them.
    secret = "rk-" + rng.randbytes(12).hex()
    container = (f"PATH=/usr/local/sbin:/usr/local/bin\nHOSTNAME=4f1c2a9e6b7d\nHOME=/root\nTERM=xterm\n"
                 f"RAILS_ENV=production\nAPP_SIGNUP_CODE={secret}\nPORT=3000\nWORKERS=4\n")
    out, hits = rule.redact(container)
    assert hits == 8 and secret not in out and "APP_SIGNUP_CODE=[REDACTED:env-dump]" in out
    # A secret-named variable's value is found anywhere, alone; a setting's is not.
    assert rule.redact(f"connecting with {FAKE_ENV['DB_PASS']}\n")[1] == 1
    assert rule.redact(f"region {FAKE_ENV['MT_REGION']}\n")[1] == 0


def test_env_dump_rule_sees_the_live_environment_change(monkeypatch: pytest.MonkeyPatch) -> None:
    """The rule reads os.environ at each call: a secret set, changed or unset after its first pass counts."""
    from memtree_plugins.redaction.envdump import EnvDumpRule

    rule = EnvDumpRule()  # the live environment
    first, second = "Vq4-" + rng.randbytes(10).hex(), "Kp7-" + rng.randbytes(10).hex()
    monkeypatch.setenv("MT_LIVE_API_TOKEN", first)
    assert rule.redact(f"token {first}\n")[1] == 1
    monkeypatch.setenv("MT_LIVE_API_TOKEN", second)
    out, hits = rule.redact(f"token {second}, was {first}\n")
    assert (hits, second in out, first in out) == (1, False, True)
    assert rule.redact(f"{base64.b64encode(second.encode()).decode()}\n")[1] == 1  # its base64 form too
    monkeypatch.delenv("MT_LIVE_API_TOKEN")
    assert rule.redact(f"token {second}\n") == (f"token {second}\n", 0)


def test_get_page_of_a_tool_output_names_the_lines_with_marks(app) -> None:
    token = "ghp_" + "".join(rng.choices("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789", k=36))
    r = tool(app, "bash")(f"echo first; echo 'token {token}'; echo last")
    page = tool(app, "get")(r.node_id)
    assert token not in page.render()
    # Line 1 is "$ <command>" (redacted too), line 3 the echoed token.
    assert re.search(r"line 3 of this node \([\w-]+\)", page.redacted), page.redacted
    assert "the original output is unchanged" in page.redacted and f"note: {page.redacted}" in page.render()


# -- a bare value that only the command names ---------------------------------------------------------------
def test_printing_a_secret_named_variable_masks_what_it_printed(app, monkeypatch) -> None:
    value = "q8Zr4vLw2mXk9TnB"  # made up; lowercase letters and digits, no shape a rule knows
    monkeypatch.setenv("GEO_API_KEY", value)
    monkeypatch.setenv("GREETING", "hello there")
    for command in ('echo "$GEO_API_KEY"', "printenv GEO_API_KEY", "printf '%s\\n' ${GEO_API_KEY}"):
        r = tool(app, "bash")(command)
        assert value not in r.render() and "[REDACTED:printed-secret]" in r.render()
    assert "hello there" in tool(app, "bash")('echo "$GREETING"').render()  # not a secret's name
    assert value.encode() not in store_bytes(app)


def test_only_a_lone_print_is_masked() -> None:
    from memtree_plugins.lib.masking.printed_secrets import mask_printed, printed_names

    assert printed_names('echo "$DB_PASSWORD"') == ["DB_PASSWORD"]
    assert printed_names("printenv NPM_TOKEN HOME") == ["NPM_TOKEN"]
    for command in ('echo "$HOME"', 'echo $TOKEN | wc -c', 'echo $(cat key); ls', "ls -la", 'grep TOKEN .env'):
        assert printed_names(command) == [], command  # a pipe, list or substitution: not a lone print
    framed = '$ echo "$X_SECRET"\nabc123def456\n[exit 0]\n'
    assert mask_printed('echo "$X_SECRET"', framed, framed=True) == (
        '$ echo "$X_SECRET"\n[REDACTED:printed-secret]\n[exit 0]\n', 1)
