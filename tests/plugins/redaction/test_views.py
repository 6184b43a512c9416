"""Secrets hidden by an encoding (memtree_plugins/redaction/views.py), through App.redact with the built-in
plugin set: folded and backslash-continued lines, hex (xxd -p, runs, dumps), JSON ``\\u`` and ``\\/`` escapes.

Encoded texts come from the real tools where there is one (``fold``, ``xxd``, ``hexdump``, ``od``); secrets are
seeded random values.  A secret leaks when it, its hex form, or any piece of either at least max(8, a third of
its length) long is left in the output (stricter than the eval's half: a fold leaves thirds too).  The must-keep texts come back byte-identical.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
import shutil
import string
import subprocess

import pytest

from memtree_core.hookspecs import hookimpl
from memtree_plugins.redaction import views
from memtree_plugins.redaction.engine import PatternRule

rng = random.Random(20261204)
AN = string.ascii_letters + string.digits


@pytest.fixture(autouse=True)
def _same_draws_in_any_order() -> None:
    rng.seed(20261204)


def r(n: int, alphabet: str = AN) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def tool(argv: list[str], text: str) -> str:
    if shutil.which(argv[0]) is None:
        pytest.skip(f"no {argv[0]} here")
    return subprocess.run(argv, input=text.encode(), capture_output=True, check=True).stdout.decode()


def pieces(secret: str) -> set[str]:
    n = max(8, len(secret) // 3)
    return {secret[i:i + n] for i in range(len(secret) - n + 1)}


def leaks(out: str, *secrets: str) -> list[str]:
    """The secrets, or their hex forms, of which a piece is in ``out`` (hex also with the blanks and colons
    between its bytes taken out)."""
    found = []
    packed = re.sub(r"[\s:]", "", out)
    for secret in secrets:
        for form, where in ((secret, out), (secret.encode().hex(), packed)):
            if any(p in where for p in pieces(form)):
                found.append(form)
    return found


def escape_one(token: str, at: int) -> str:
    """``token`` as JSON with one of its characters written as a ``\\u00XX`` escape."""
    return token[:at] + f"\\u{ord(token[at]):04x}" + token[at + 1:]


def bypasses() -> dict[str, tuple[str, list[str]]]:
    """name -> (the encoded text, its secrets)."""
    ghp = "ghp_" + r(36)
    aws = "AKIA" + r(16, string.ascii_uppercase + string.digits)
    slack = "xoxb-" + r(12, string.digits) + "-" + r(12, string.digits) + "-" + r(24)
    env = f"GITHUB_TOKEN={ghp}\nAWS_ACCESS_KEY_ID={aws}\nLOG_LEVEL=info\n"
    password = r(18)
    secret_key = r(40, AN + "/+")
    return {
        "fold -w 20 of an export line": (tool(["fold", "-w", "20"], f"export GITHUB_TOKEN={ghp}\n"), [ghp]),
        "fold -w 20 of a bare token": (tool(["fold", "-w", "20"], f"{ghp}\n"), [ghp]),
        "fold -w 32 of a log line": (tool(["fold", "-w", "32"], f"deploy: pushing with {ghp} as ci-bot\n"), [ghp]),
        "fold -w 16 of an aws key": (tool(["fold", "-w", "16"], f"AWS_ACCESS_KEY_ID={aws}\n"), [aws]),
        "fold -w 20 of a key name and value": (tool(["fold", "-w", "20"], f"aws_secret_access_key = {secret_key}\n"),
                                               [secret_key]),
        "fold -w 24 of a slack token": (tool(["fold", "-w", "24"], f"{slack}\n") + "posted\n", [slack]),
        "continued header": (f'curl -sS -H "Authorization: token {ghp[:18]}\\\n{ghp[18:]}" https://api.github.com/user\n',
                             [ghp]),
        "continued export": (f"export GITHUB_TOKEN={ghp[:25]}\\\n{ghp[25:]}\n", [ghp]),
        "continued Dockerfile ENV": (f"FROM alpine\nENV SLACK_TOKEN={slack[:30]}\\\n{slack[30:]}\nRUN true\n", [slack]),
        "xxd -p of an .env": (tool(["xxd", "-p"], env), [ghp, aws]),
        "xxd of an .env": (tool(["xxd"], env), [ghp, aws]),
        "hexdump -C of an .env": (tool(["hexdump", "-C"], env), [ghp, aws]),
        "od -A x -t x1z of an .env": (tool(["od", "-A", "x", "-t", "x1z"], env), [ghp, aws]),
        "od -t x1 -A n of a token": (tool(["od", "-t", "x1", "-A", "n"], ghp), [ghp]),
        "colon-separated hex bytes": ("bytes " + ":".join(f"{b:02x}" for b in aws.encode()) + "\n", [aws]),
        "hex run in a log line": (f"debug: token bytes {ghp.encode().hex()} (hex)\n", [ghp]),
        "0x hex run": (f"const KEY = 0x{aws.encode().hex()};\n", [aws]),
        "\\u escape inside a token": ('{"level":"info","msg":"pushing with ' + escape_one(ghp, 11) + ' now"}\n', [ghp]),
        "\\u escapes in a keyed token": ('{"token": "' + escape_one(escape_one(aws, 4), 9) + '"}', [aws]),
        "JSON-escaped URL slashes": ('{"url":"https:\\/\\/joe:' + password + '@db.example.com\\/app"}\n', [password]),
        "JSON-escaped URL in a log": ('{"msg":"connect","dsn":"postgres:\\/\\/app:' + password + '@10.0.0.7:5432\\/x"}',
                                      [password]),
    }


BYPASSES = bypasses()


@pytest.mark.parametrize("name", list(BYPASSES))
def test_an_encoded_secret_is_redacted(app, name):
    text, secrets = bypasses()[name]
    out, hits = app.redact(text)
    assert not leaks(out, *secrets), out
    assert "decoded-view" in hits, hits
    assert out.count("\n") == text.count("\n")  # line numbers stay the source's
    assert app.redact(out) == (out, {}), "redacting twice must equal redacting once"


def test_marks_name_the_rule_that_found_the_secret(app):
    ghp = "ghp_" + r(36)
    out, _ = app.redact(tool(["fold", "-w", "20"], f"{ghp}\n"))
    assert "[REDACTED:github-pat]" in out
    out, _ = app.redact('{"u":"https:\\/\\/joe:' + r(16) + '@h.example.com\\/x"}')
    assert "[REDACTED:url-credentials]" in out


def test_only_the_secret_goes_and_the_rest_of_the_line_stays(app):
    ghp = "ghp_" + r(36)
    text = f'curl -H "Authorization: token {ghp[:18]}\\\n{ghp[18:]}" https://api.github.com/user\n'
    out, _ = app.redact(text)
    assert out.startswith('curl -H "Authorization: token [REDACTED:')
    assert out.endswith('\n" https://api.github.com/user\n')
    url = '{"url":"https:\\/\\/joe:' + r(16) + '@db.example.com\\/app"}'
    assert app.redact(url)[0] == '{"url":"https:\\/\\/joe:[REDACTED:url-credentials]@db.example.com\\/app"}'


def _must_keep() -> dict[str, str]:
    shas = "".join(f"commit {hashlib.sha1(rng.randbytes(8)).hexdigest()}\nAuthor: Dev <dev@example.com>\n\n    fix {i}\n\n"
                   for i in range(30))
    sums = "".join(f"{hashlib.sha256(rng.randbytes(8)).hexdigest()}  /usr/bin/tool-{i}\n" for i in range(40))
    binary = rng.randbytes(600)
    stub = "".join(f"{name}: int\n" for name in ["MUST_CHANGE_PASSWORD", "FK_NO_INDEX_CHILD_XX", "SECRET_KEY_MIN_CHAR",
                                                 "TOKEN_VIRTUALIZE_ALL", "TOKEN_VIRTUALIZE_ENA", "FOO"])
    conf = ("#HandlePowerKeyLongPress=ignore\n#HandleRebootKey=reboot\n#HandleRebootKeyLongPress=poweroff\n"
            "#HandleSuspendKey=suspend\n#jdk.http.ntlm.transparentAuth=disabled\n#\n")
    listing = "".join(f"/usr/share/doc/package-{i}/changelog.Debian.gz\n" for i in range(40))
    script = ("docker run \\\n  --rm \\\n  -e API_TOKEN \\\n  -v \"$PWD:/src\" \\\n  image:tag \\\n  make test\n"
              "CFLAGS=-O2\\\n-g make\n")
    code = ("if ok:\n        getpass = win_getpass\nelse:\n    pass\n"
            "x = call_something_long(argument_one)\nanother_identifier_here()\n")
    return {
        "git log": shas,
        "sha256sum": sums,
        "xxd -p of binary": tool(["xxd", "-p"], binary.decode("latin-1")),
        "hex run of a digest": f"sha256:{hashlib.sha256(b'x').hexdigest()} 0x{rng.randbytes(32).hex()}\n",
        "hex of harmless text": f"payload {b'hello world, nothing to see here'.hex()}\n",
        "decimal run": "id 2024120412345678901234 ok\n",
        "fingerprints and MACs": ("SHA256 Fingerprint=" + ":".join(f"{b:02X}" for b in rng.randbytes(32)) + "\n"
                                  "ether 02:42:ac:11:00:02  txqueuelen 0\n    Modulus:\n        "
                                  + "\n        ".join(":".join(f"{b:02x}" for b in rng.randbytes(15)) for _ in range(8))
                                  + "\n"),
        "type stub": stub,
        "config records": conf,
        "listing": listing,
        "shell continuations": script,
        "code": code,
        "JSON escapes": '{"html":"\\u003cdiv class=\\"a\\"\\u003e\\u0026amp;","url":"https:\\/\\/example.com\\/a\\/b",'
                        '"path":"C:\\\\users\\\\u0041dmin"}\n',
        "base64 lines": "".join(r(76, AN + "+/") + "\n" for _ in range(5)),
    }


MUST_KEEP = _must_keep()


@pytest.mark.parametrize("name", list(MUST_KEEP))
def test_ordinary_text_comes_back_as_it_is(app, name):
    text = _must_keep()[name]
    assert app.redact(text) == (text, {})


def test_nothing_to_decode_costs_no_view(monkeypatch):
    def no_view(text, *args, **kwargs):
        raise AssertionError(f"a view was built for {text[:60]!r}")

    monkeypatch.setattr(views, "View", no_view)
    for name, text in _must_keep().items():
        if name not in ("JSON escapes", "shell continuations", "hex of harmless text", "base64 lines"):
            assert views.DecodedViews(lambda: []).redact(text) == (text, 0)


class AcmeRules:
    """A third-party plugin with a rule of its own: the views run it too."""

    @hookimpl
    def memtree_register_redaction_rules(self, register):
        register(PatternRule("acme-token", re.compile(r"acme_[A-Za-z0-9]{32}"), literals=("acme_",)))


def test_views_run_every_registered_rule(home, project):
    from memtree_core.app import App

    app = App.open(project, extra=[("acme", AcmeRules())])
    try:
        assert app.plugins.redaction_rules.names()[:2] == ["dense-line", "decoded-view"]
        acme = "acme_" + r(32)
        for text in (tool(["fold", "-w", "20"], f"{acme}\n"), f"dump {acme.encode().hex()}\n",
                     '{"m":"' + escape_one(acme, 9) + '"}', f"k={acme[:20]}\\\n{acme[20:]}\n"):
            out, hits = app.redact(text)
            assert not leaks(out, acme) and "[REDACTED:acme-token]" in out, out
    finally:
        app.close()


def test_past_the_budget_a_decoded_hex_run_is_redacted_whole(app, monkeypatch):
    monkeypatch.setattr(views, "MAX_VIEW", 40)
    ghp = "ghp_" + r(36)
    text = f"hex {ghp.encode().hex()}\n"
    out, hits = app.redact(text)
    assert out == "hex [REDACTED:decoded-view]\n" and hits == {"decoded-view": 1}


def test_covers_hold_every_replaced_span():
    """covers() must cover every span a rule replaced, whatever the text around it repeats."""
    pick = random.Random(7)
    for _ in range(2000):
        before = "".join(pick.choice("ab[]:REDACTED\n ") for _ in range(pick.randint(1, 40)))
        spans, pos = [], 0
        while pos < len(before) and len(spans) < 4:
            lo = pick.randint(pos, len(before) - 1)
            hi = pick.randint(lo + 1, min(len(before), lo + 6))
            spans.append((lo, hi))
            pos = hi + pick.randint(0, 3)
        after, last = [], 0
        for lo, hi in spans:
            after += [before[last:lo], "[REDACTED:t]"]
            last = hi
        after.append(before[last:])
        got = views.covers(before, "".join(after))
        for lo, hi in spans:
            if before[lo:hi] == "[REDACTED:t]":
                continue  # a mark already there is not a redaction
            assert any(a <= lo and hi <= b for a, b, _ in got), (before, spans, got)


def test_a_decoded_character_maps_back_to_its_whole_escape():
    text = 'x "ab\\u0063d" y'
    start = text.index("\\u")
    view = views.View(text, [(start, start + 6, "c", views.KIND_DECODED)], [(0, len(text))])
    assert view.text == 'x "abcd" y'
    at = view.text.index("c")
    assert view.original(at, at + 1) == [(start, start + 6, True)]
    assert view.original(view.text.index("a"), at) == [(text.index("a"), text.index("\\u"), False)]
    assert json.loads(text[2:-2]) == "abcd"


class Fragile:
    """A plugin rule that fails on some text: on a decoded view too, the text is refused, naming the rule."""

    name = "fragile"

    def redact(self, text: str) -> tuple[str, int]:
        if "ghp_" in text:
            raise ValueError("cannot cope")
        return text, 0


class FragileRules:
    @hookimpl
    def memtree_register_redaction_rules(self, register):
        register(Fragile())


def test_a_rule_failing_on_a_view_refuses_the_text_and_is_named(home, project):
    from memtree_core.app import App
    from memtree_core.daemon.redaction_gate import RedactionUnavailable
    from memtree_core.daemon.redaction_gate import redact as gate

    app = App.open(project, extra=[("fragile", FragileRules())])
    try:
        text = tool(["fold", "-w", "20"], "ghp_" + r(36) + "\n").replace("ghp_", "ghX_")  # only the view holds it
        text = text.replace("ghX_", "ghp\\u005f")
        with pytest.raises(RedactionUnavailable, match="'fragile' failed on a decoded view: ValueError: cannot cope"):
            gate(app.settings, app.plugins, text)
    finally:
        app.close()


@pytest.mark.parametrize("name", list(BYPASSES) + list(MUST_KEEP))
def test_the_view_text_alone_is_the_view_s_text(name):
    """The view's text is first built without its map back (nearly always nothing is found in it): both ways
    give the same text, for every kind of edit."""
    text = BYPASSES[name][0] if name in BYPASSES else MUST_KEEP[name]
    found = views.find_edits(text)
    edits = sorted(edit for edit, _ in found)
    windows = views._merged([window for _, window in found])
    assert views.view_text(text, edits, windows) == views.View(text, edits, windows).text


def test_hints_say_where_each_kind_can_find_something(monkeypatch):
    """The one-pass hints (views._hints) are each kind's own first check: a kind whose hint is absent finds
    nothing, and the places found are the same with the hints as with every kind checking on its own."""
    pytest.importorskip("hyperscan")
    pick = random.Random(rng.randrange(2**32))
    bits = ["0123456789abcdef", "ab cd ef 01 23 45 67 89", "ab:cd:ef:01:23:45:67:89", "6768705f616263646566",
            "00000000: 6768 705f 6162 6364  ghp_abcd\n", "\\u0041", "\\/", "\\\n", "\\\\", "G", " ", "\n", ":",
            "é", "\udcff", "x" * 16, "ghp_" + r(36)]
    texts = ["".join(pick.choices(bits, k=pick.randint(0, 24))) for _ in range(3000)]
    for text in texts:
        raw = text.encode("utf-8", "surrogatepass")
        hints = views._hints(raw)
        mapped = raw.translate(views._HEXMAP)
        if "dump" not in hints:
            assert views._dump_edits(text, mapped) == []
        if "hex" not in hints:
            assert views._hex_edits(text, raw, mapped) == []
        if not hints & {"spaced", "colon"}:
            assert views._spaced_hex_edits(text, mapped) == []
        assert ("backslash" in hints) == (views._BACKSLASHED.search(text) is not None)
    with_hints = [views.find_edits(t) for t in texts]
    monkeypatch.setattr(views, "_hints_db", [None])  # as without the hyperscan module
    assert [views.find_edits(t) for t in texts] == with_hints


def test_hints_from_several_threads_at_once():
    """Each thread scans with its own Hyperscan scratch space: threads finding hints at once get what one
    thread alone gets, and none fails."""
    import threading

    pytest.importorskip("hyperscan")
    texts = [("6768705f616263646566 \\u0041 ab cd ef 01 23 45 67 89 " * 2000)[: 50_000 + k] for k in range(8)]
    alone = [views._hints(t.encode()) for t in texts]
    got: list[object] = []

    def work() -> None:
        try:
            got.append([views._hints(t.encode()) for t in texts for _ in range(5)][::5])
        except Exception as exc:  # reported below, in the test's own thread
            got.append(exc)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert got == [alone] * 4


def test_a_directory_listing_s_headings_are_no_folds(tmp_path):
    """``ls -laR``: each directory's heading (a path ending in ``:``) over its ``total N`` line is a heading and
    its content, not a token cut in two; a listing builds no view at all."""
    for i in range(4):
        sub = tmp_path / f"package_number_{i}" / "subdirectory_with_a_long_name"
        sub.mkdir(parents=True)
        (sub / "module.py").write_text("x = 1\n")
    listing = tool(["ls", "-laR", str(tmp_path)], "")
    assert listing.count(":\ntotal ") >= 8
    assert views.find_edits(listing) == []


def test_a_cut_after_a_colon_in_a_fold_run_is_still_a_seam():
    """The heading exception gives way to a fold run: a line of the same width above says fold."""
    folded = tool(["fold", "-w", "20"], "deployment-pipeline-credentials-for-bot:a1B2c3 done\n")
    first, second, third = folded.split("\n")[:3]
    assert len(first) == len(second) == 20 and second.endswith(":") and " " in third
    cut = len(first) + 1 + len(second)
    assert any(edit[:2] == (cut, cut + 1) for edit, _ in views.find_edits(folded))


def test_the_record_check_answers_as_its_regex_does():
    """A line starts a record (``KEY=value``, ``name: v``, a call, a comment, a prompt) exactly when _RECORD says
    so; the check only skips the regex on lines without a character it needs (a listing's file names)."""
    alphabet = " \t\r#;!/-$>%=:(aZ_9.\u00e9\u00a0"
    for _ in range(20000):
        line = r(rng.randint(0, 9), alphabet)
        end = rng.randint(0, len(line))
        text = f"above\n{line}\nbelow"
        assert views._is_record(text, 6, 6 + end) == (views._RECORD.match(text, 6, 6 + end) is not None), (line, end)
    for line in ("libfoo-bar_baz.cpython-312-x86_64-linux-gnu.so", "KEY=value", "  name: v", "call(x)", "# note",
                 "$ ls", "// c", "-- sql", "a==b", "x" * 200 + "=", "\tindented=1"):
        assert views._is_record(line, 0, len(line)) == (views._RECORD.match(line) is not None), line


def test_the_fold_search_finds_what_it_always_found():
    """Seeded texts of lines that make and break folds (names, records, headings, hex, CRLF, PEM, blanks that
    are not spaces): the cuts found are pinned by their digest, taken before the search was made cheaper, so a
    faster search finds exactly the same cuts (a change of what counts as a fold changes the digest)."""
    g = random.Random(20261205)
    parts = ["", "\r", "abcdefghijklmnopqrstu", "ABCDEF0123456789abcd", "KEY=abcdefghijklmnopq", "/usr/lib/x/y/zzzzzzz:",
             "total 8", "a b", "name: value here", "-----BEGIN RSA KEY-----", "-----END RSA KEY-----", "ghp_abcdefghij",
             "klmnopqrstuvwxyz0123", "\u00a0abcdefghijklmnopqr", "abc\tdefghijklmnopqrs", "\u00e9" * 20, "#comment",
             "0123456789abcdef01", "foo(barbazquxquuxcorge", "  $ cmdlinecmdlinecmdline", "--flagflagflagflagflag",
             "__init__.cpython-312.pyc", "x" * 40, "nameOfThing:valuevalue", "abc==defghijklmnopqrstu"]
    digest, seams = hashlib.sha256(), 0
    for _ in range(4000):
        text = "\n".join(g.choice(parts) + g.choice(["", "\r", "", "x" * g.randint(0, 20)])
                         for _ in range(g.randint(1, 12)))
        found = views._fold_edits(text)
        seams += len(found)
        digest.update(repr(found).encode())
    assert seams == 2620
    assert digest.hexdigest() == "9b74aead9f67791fc557c3a05402a9a483f881ae3c3a6f3853966890d5181039"
