"""The secret catalogue: gitleaks' default rules shipped as data, run under RE2 with gitleaks' checks, user
rule files in the same schema, marks and stats per rule id, and the gate closed when it cannot load.

Tokens are built from seeded random draws (the same on every run)."""

from __future__ import annotations

import json
import random
import string
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from helpers.common import MEMTREE, ingest_ack, wait_for

from memtree_core.app import App
from memtree_core.daemon import ingest
from memtree_core.daemon.redacting import redact
from memtree_core.daemon.redaction_gate import RedactionUnavailable
from memtree_plugins.redaction.catalogue import (
    GITLEAKS,
    HERE,
    CatalogueError,
    builtin,
    hyperscan_db,
    matcher,
    parse,
)
from memtree_plugins.redaction.catalogue.matcher import CatalogueRule, Engine, _kept_runs, align

FIXTURES = Path(__file__).resolve().parents[2] / "data" / "claude-code-payloads"
AN = string.ascii_letters + string.digits
UP = string.ascii_uppercase + string.digits
rng = random.Random(20261204)


@pytest.fixture(autouse=True)
def _same_draws_in_any_order() -> None:
    rng.seed(20261204)


def r(n: int, alphabet: str = AN) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def test_the_shipped_catalogue_is_gitleaks_config_verbatim_with_its_licence() -> None:
    text = GITLEAKS.read_text()
    assert text.startswith("# This file has been auto-generated.") and 'title = "gitleaks config"' in text
    notice = (HERE / "LICENSE.gitleaks").read_text()
    assert notice.startswith("MIT License") and "Zachary Rice" in notice
    assert "b58d3f102cf3a2c84cb7f923d05c25c9b1aed84b" in (HERE / "SOURCE.gitleaks").read_text()
    cat = builtin()
    assert len(cat.rules) + len(cat.skipped) == text.count("[[rules]]") >= 200
    assert list(cat.skipped) == ["pkcs12-file"]  # a file-name rule: nothing to find in a text
    generic = next(rule for rule in cat.rules if rule.id == "generic-api-key")
    assert generic.entropy == 3.5 and "token" in generic.keywords and len(generic.allowlists) >= 2
    assert cat.allowlists[0].stopwords and cat.allowlists[0].regexes


def test_every_regex_rule_of_the_catalogue_compiles_in_the_engine() -> None:
    engine = Engine(builtin(), compile_all=True)
    assert len(engine.rules) == len(builtin().rules) >= 200
    assert all(c.rule.secret_group <= c.groups for c in engine.rules)


VENDOR = [  # (rule id, token): shapes memtree's own rules did not know
    ("dynatrace-api-token", lambda: f"dt0c01.{r(24, UP)}.{r(64, UP)}"),
    ("1password-secret-key", lambda: f"A3-{r(6, UP)}-{r(11, UP)}-{r(5, UP)}-{r(5, UP)}-{r(5, UP)}"),
    ("harness-api-key", lambda: f"pat.{r(22)}.{r(24)}.{r(20)}"),
    ("infracost-api-token", lambda: f"ico-{r(32)}"),
    ("maxmind-license-key", lambda: f"{r(6)}_{r(29)}_mmk"),
    ("openshift-user-token", lambda: f"sha256~{r(43)}"),
    ("scalingo-api-token", lambda: f"tk-us-{r(48)}"),
]


@pytest.mark.parametrize("rule_id,make", VENDOR, ids=[v[0] for v in VENDOR])
def test_vendor_tokens_are_redacted_with_the_gitleaks_id_in_the_mark(app, rule_id, make) -> None:
    token = make()
    text = f"2026-12-04T20:00:01Z INFO client configured with {token} ok\n"
    out, hits = app.redact(text)
    assert token not in out and out.count(f"[REDACTED:{rule_id}]") == 1, out
    assert hits == {rule_id: 1}  # counted per gitleaks id, not as one "gitleaks" rule


def test_mid_pattern_case_flags_mean_what_go_means() -> None:
    # dt0c01\.(?i)[a-z0-9]{24}...: the prefix stays case-sensitive, the rest is not (Python re cannot say this)
    rule = CatalogueRule()
    body = f"{r(24, UP)}.{r(64, UP)}"
    assert rule.redact(f"x dt0c01.{body} y")[0] == "x [REDACTED:dynatrace-api-token] y"
    assert rule.redact(f"x DT0C01.{body} y") == (f"x DT0C01.{body} y", 0)


USER_RULES = """
[allowlist]
stopwords = ["notreal"]

[[rules]]
id = "acme-key"
description = "Acme API key"
regex = '''acme_(?i)([a-z0-9]{16})\\b'''
keywords = ["acme_"]
entropy = 3.0
[[rules.allowlists]]
regexTarget = "line"
regexes = ['''#\\s*acme-fixture''']

[[rules]]
id = "acme-group"
regex = '''acmegrp (tag_[a-z]+)? ?(tok_[a-z0-9]{12})'''
secretGroup = 2
keywords = ["acmegrp"]

[[rules]]
id = "acme-gated"
regex = '''zz_[a-z0-9]{16}'''
keywords = ["acme-gate"]
[[rules.allowlists]]
condition = "AND"
paths = ['''\\.bb$''']
regexes = ['''.*''']
"""


def _user_rule() -> CatalogueRule:
    return CatalogueRule(base=lambda: parse(USER_RULES.encode(), "acme.toml"))


def test_secret_group_entropy_keywords_and_allowlists_are_honoured() -> None:
    rule = _user_rule()
    key = r(16, string.ascii_lowercase + string.digits)
    assert rule.redact(f"k=acme_{key}\n") == ("k=acme_[REDACTED:acme-key]\n", 1)  # group 1: first non-empty
    assert rule.redact("k=acme_aaaaaaaabbbbbbbb\n")[1] == 0  # entropy 1.0 <= 3.0
    assert rule.redact(f"k=acme_{key[:9]}notreal\n")[1] == 0  # a global stopword in the secret
    assert rule.redact(f"k=acme_{key}  # acme-fixture\n")[1] == 0  # the rule's line allowlist
    assert rule.redact(f"k=ACME_{key}\n")[1] == 0  # case-sensitive before (?i)
    tok = f"tok_{r(12, string.ascii_lowercase + string.digits)}"
    assert rule.redact(f"acmegrp tag_x {tok}") == ("acmegrp tag_x [REDACTED:acme-group]", 1)  # secretGroup 2
    zz = f"zz_{r(16, string.ascii_lowercase + string.digits)}"
    assert rule.redact(f"v={zz}")[1] == 0  # its keyword is absent: the rule does not run
    # An AND allowlist that needs a file path never applies to a text: the finding stands.
    assert rule.redact(f"acme-gate v={zz}") == ("acme-gate v=[REDACTED:acme-gated]", 1)


def test_generic_matches_that_memtree_judges_code_or_placeholders_are_kept() -> None:
    rule = CatalogueRule()
    kept = ["api_key = settings.API_KEY_V2\n", 'token = "your_api_key_here_12"\n',
            "issued token_id=01JYJS1FPG93N6EW61B37HHMWJ expires_in=3600\n",
            'secret_key_path = "/etc/app/k3y-9f8a7b6c5d"\n',
            # names as code writes them: types, fields, file names, keyword arguments
            "def verify(self, key: Ed25519PublicKey | X448PublicKey) -> bool:\n",
            "#define api_column_text16   sqlite_api->column_text16\n",
            "# openssl pkcs8 -topk8 -in rsa-4096-private-key.pem > rsa-4096-private-key.pk8\n",
            "    connect(auth=auth, refresh_credentials=refresh_credentials, retry_on_timeout=not fast)\n",
            # a rule gitleaks keeps to Terraform files, on JavaScript: plain words are no password
            'const hasPasswordOption = "username" in opts && "password" in opts;\n']
    for text in kept:
        assert rule.redact(text) == (text, 0), text
    value = r(24)
    assert rule.redact(f'api_key = "{value}"\n') == ('api_key = "[REDACTED:generic-api-key]"\n', 1)


def test_a_value_an_earlier_rule_redacted_is_not_marked_twice(app) -> None:
    text = f"export GITHUB_TOKEN=ghp_{r(36)}\n"
    out, hits = app.redact(text)
    assert out.count("[REDACTED:") == 1 and sum(hits.values()) == 1
    assert app.redact(out) == (out, {})


def test_bad_rule_files_are_refused_with_the_fix() -> None:
    bad = {
        "[[rules]]\nid = 'x'\nregex = '''(?<=a)b'''\n": "does not compile under RE2",
        "[[rules]]\nid = 'x'\nregex = 'a(b)'\nsecretGroup = 2\n": "only 1 group",
        "[[rules]]\nid = 'x'\nregex = 'a'\n[[rules]]\nid = 'x'\nregex = 'b'\n": "used twice",
        "[[rules]]\nid = 'x'\nregx = 'a'\n": "unknown key",
        "[[rules]\n": "not a valid TOML",
    }
    for source, why in bad.items():
        rule = CatalogueRule(base=lambda s=source: parse(s.encode(), "mine.toml"))
        assert why in (rule.unavailable or ""), (source, rule.unavailable)
        with pytest.raises(CatalogueError, match="mine.toml"):
            rule.redact("anything")


class Served:
    def __init__(self, app: App) -> None:
        self.app = app
        self.sock = ingest.bind(app.paths, app.identity.root)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=ingest.serve, args=(self.sock, app, self.stop), daemon=True)
        self.thread.start()

    def send(self, data: dict) -> dict:
        return ingest_ack(self.app.paths.ingest_socket, data)

    def close(self) -> None:
        self.stop.set()
        self.thread.join(10)


def _bash(project: Path, stdout: str) -> dict:
    p = json.loads((FIXTURES / "post-bash.json").read_text())
    p["cwd"] = str(project)
    p["tool_input"]["command"] = "./deploy --verbose"
    p["tool_response"]["stdout"] = stdout
    p["tool_response"]["stderr"] = ""
    return p


def _user_config(home: Path, data: dict) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.json").write_text(json.dumps(data))


def test_user_rule_files_run_on_the_capture_path_and_stats_count_each_id(home: Path, project: Path,
                                                                         tmp_path: Path) -> None:
    rules = tmp_path / "acme.toml"
    rules.write_text(USER_RULES)
    _user_config(home, {"redaction": {"ruleFiles": [str(rules)]}})
    key = r(16, string.ascii_lowercase + string.digits)
    dt = f"dt0c01.{r(24, UP)}.{r(64, UP)}"
    app = App.open(project)
    served = Served(app)
    try:
        ack = served.send(_bash(project, f"using acme_{key}\nand {dt}\nthen acme_{key[::-1]} done\n"))
        assert ack["ok"] is True, ack
        node = app.store.get_node(ack["ids"][0])
        assert node is not None and key not in node.content and dt not in node.content
        assert node.content.count("[REDACTED:acme-key]") == 2 and "[REDACTED:dynatrace-api-token]" in node.content
        counted = app.store.counters("redaction:")
        assert counted["redaction:acme-key"] == 2 and counted["redaction:dynatrace-api-token"] == 1
    finally:
        served.close()
        app.close()


def test_a_rule_file_that_cannot_load_stores_nothing_and_info_says_why(home: Path, project: Path,
                                                                       tmp_path: Path) -> None:
    rules = tmp_path / "mine.toml"
    rules.write_text("[[rules]]\nid = 'lookbehind'\nregex = '''(?<=key=)\\w+'''\n")
    _user_config(home, {"redaction": {"ruleFiles": [str(rules)]}})
    app = App.open(project)
    served = Served(app)
    try:
        assert "mine.toml: rule lookbehind" in (app.redaction_unavailable or "")
        ack = served.send(_bash(project, f"secret output ghp_{r(36)}\n"))
        assert ack == {"ok": False, "reason": "redaction-unavailable"}, ack
        assert app.store.query("SELECT id FROM nodes WHERE kind = 'tool_output'") == []
        with pytest.raises(RedactionUnavailable, match="does not compile under RE2"):
            app.redact("anything")
    finally:
        served.close()
        app.close()
    out = subprocess.run([MEMTREE, "info", "--project", str(project)], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert "NOTHING IS STORED" in out.stdout and "mine.toml: rule lookbehind" in out.stdout, out.stdout


def _refresh(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "memtree_plugins.redaction.catalogue.refresh", *args],
                          capture_output=True, text=True, timeout=120)


def test_refresh_validates_before_it_rewrites_the_catalogue(tmp_path: Path) -> None:
    assert "--ref" in _refresh("--help").stdout
    dest = tmp_path / "catalogue"
    dest.mkdir()
    for name in ("gitleaks.toml", "LICENSE.gitleaks", "SOURCE.gitleaks"):
        (dest / name).write_bytes((HERE / name).read_bytes())
    newer = tmp_path / "newer.toml"
    newer.write_text(GITLEAKS.read_text() + "\n[[rules]]\nid = 'acme-new'\nregex = '''acme_new_[a-z]{20}'''\n")
    done = _refresh("--file", str(newer), "--ref", "v9.9.9", "--dest", str(dest))
    assert done.returncode == 0, done.stderr
    assert (dest / "gitleaks.toml").read_text() == newer.read_text()
    assert "ref v9.9.9" in (dest / "SOURCE.gitleaks").read_text()
    broken = tmp_path / "broken.toml"
    broken.write_text("[[rules]]\nid = 'back'\nregex = '''(a)\\1'''\n")  # a backreference: RE2 refuses it
    failed = _refresh("--file", str(broken), "--dest", str(dest))
    assert failed.returncode == 1 and "rule back" in failed.stderr and "nothing written" in failed.stderr
    assert (dest / "gitleaks.toml").read_text() == newer.read_text()


def test_pieces_an_earlier_rule_left_of_a_catalogue_secret_are_redacted(app) -> None:
    # url-credentials takes the password and keeps the user; gitleaks' sidekiq rule calls user:password the
    # secret.  memtree's slack-token shape stops at the first capital; gitleaks' takes the whole token.
    user, password = r(8, "0123456789abcdef"), r(8, "0123456789abcdef")
    tail = r(16, AN)
    slack = f"xapp-1-A{r(9, UP)}-{r(13, string.digits)}-{r(4, 'abcdef0123')}{tail}"
    text = f"BUNDLE_GEMS__CONTRIBSYS__COM: http://{user}:{password}@gems.contribsys.com/\nconnecting {slack} now\n"
    out, hits = app.redact(text)
    for piece in (user, password, tail, slack[-12:]):
        assert piece not in out, out
    assert "[REDACTED:sidekiq-sensitive-url]" in out and out.endswith(" now\n") and out.count("\n") == 2
    assert app.redact(out) == (out, {})


def test_align_finds_each_kept_stretch_or_refuses_a_text_it_does_not_come_from() -> None:
    old = "a=abcdef; b=123456 end"
    new = "a=[REDACTED:x]; b=[REDACTED:y] end"
    kept = align(old, new)
    assert kept == [(0, 0, 2), (8, 14, 4), (18, 30, 4)]
    assert all(old[j:j + n] == new[at:at + n] for j, at, n in kept)
    assert align(old, "a=[REDACTED:x]; c=[REDACTED:y] end") is None
    assert align(old, old) == [(0, 0, len(old))]
    # the kept columns of a span of the old line, as stretches of the new one
    assert list(_kept_runs(kept, 0, len(old))) == [(0, 2), (14, 18), (30, 34)]
    assert list(_kept_runs(kept, 3, 10)) == [(14, 16)]
    assert list(_kept_runs(kept, 2, 8)) == []


LEAKY = Path(__file__).resolve().parents[3] / "eval" / "leaky"


def test_the_hyperscan_prefilter_changes_no_finding(tmp_path: Path) -> None:
    texts = [p.read_text() for p in sorted(LEAKY.rglob("*")) if p.is_file() and p.suffix != ".json"]
    texts += [f"2026-12-04 INFO using {make()} ok\n" for _rule, make in VENDOR]
    # Beyond ASCII (Hyperscan sees one byte per character), the Kelvin sign RE2 folds to k (no Hyperscan).
    texts += [f"密钥：{make()} — ok, naïve café\n" for _rule, make in VENDOR]
    texts += ["\n".join(f"日志 {line} ✓" for line in t.splitlines()) for t in texts[:8]]
    texts.append(f"\u212aEY=\"{r(30)}\" ſecret={r(30)}\n")
    texts.append("".join(texts))
    plain = Engine(builtin())
    fast = Engine(builtin())
    thread = hyperscan_db.ensure(fast, tmp_path / "hs", wait=True)
    assert thread is not None and thread.name == "memtree-hyperscan-build"  # built off the calling thread
    assert fast.prefilter is not None and list((tmp_path / "hs").glob("*.hsdb"))
    for text in texts:
        assert fast.findings(text) == plain.findings(text)
    again = Engine(builtin())
    assert hyperscan_db.ensure(again, tmp_path / "hs") is None and again.prefilter is not None  # from the cache
    other = parse(b"[[rules]]\nid = 'x'\nregex = '''acme_[a-z]{9}'''\n", "x.toml")
    assert hyperscan_db.key([r.regex for r in other.rules]) != hyperscan_db.key([r.regex for r in builtin().rules])


def test_a_busy_engine_builds_its_database_in_the_background_under_memtree_home(home: Path,
                                                                                project: Path) -> None:
    app = App.open(project)
    try:
        assert app.redaction_unavailable is None  # the engine is built: no database cached, none built yet
        cache = home / "cache" / "hyperscan"
        assert not cache.exists()
        chunk = "".join(p.read_text() for p in sorted((LEAKY / "clean").iterdir()))
        for _ in range(matcher.BUSY_BYTES // len(chunk) + 2):
            app.redact(chunk)
        wait_for(lambda: list(cache.glob("*.hsdb")), 60, "the cached database")
    finally:
        app.close()


def test_a_text_dense_with_one_rules_matches_is_redacted_unjudged_past_the_limit() -> None:
    # Judging costs Python time per match; past JUDGE_LIMIT matches of one rule in one text the rest are
    # redacted as found (fail closed), here low-entropy ones gitleaks' check would have let through.
    rule = _user_rule()
    low = "acme_aaaaaaaabbbbbbbb "  # entropy 1.0 <= 3.0: judged, it stays
    n = matcher.JUDGE_LIMIT + 50
    out, hits = rule.redact(low * n)  # one long line
    assert hits == 50 and out.count("acme_aaaaaaaabbbbbbbb") == matcher.JUDGE_LIMIT


def test_a_line_allowlist_sees_a_bounded_window_of_a_long_line() -> None:
    rule = _user_rule()
    key = r(16, string.ascii_lowercase + string.digits)
    near = f"k=acme_{key}  # acme-fixture"
    far = f"k=acme_{key} " + "x" * (2 * matcher.LINE_WINDOW) + "# acme-fixture"
    assert rule.redact(near)[1] == 0  # the allowlist applies
    assert rule.redact(far)[1] == 1  # too far along the line to vouch for it: redacted


def test_past_the_dense_limit_the_rest_of_the_text_is_redacted_whole_keeping_its_lines() -> None:
    rule = _user_rule()
    alphabet = string.ascii_lowercase + string.digits
    keys = [f"k=acme_{''.join(rng.sample(alphabet, 16))}" for _ in range(matcher.DENSE_LIMIT + 40)]  # 4 bits/char
    text = "header line\n" + "\n".join(keys) + "\nlast line\n"
    out, hits = rule.redact(text)
    assert not any(k[7:] in out for k in keys) and out.startswith("header line\nk=acme_[REDACTED:acme-key]")
    assert out.endswith("[REDACTED:acme-key]") and "last line" not in out and hits == matcher.DENSE_LIMIT + 1
    kept = redact([rule], text)  # the host's pass puts the lost lines back after the mark
    assert kept.text.count("\n") == text.count("\n") and kept.hits == {"acme-key": matcher.DENSE_LIMIT + 1}


def test_keyword_check_in_one_pass_equals_a_substring_test_per_keyword() -> None:
    """Rules Hyperscan selected keep only those with a keyword in the lower-cased text: one caseless pass
    over the text's bytes when many keywords are to be looked for, the same rules as a test per keyword
    (keywords in any case, glued, beside characters beyond ASCII; "İ" lower-cases to two characters)."""
    pytest.importorskip("hyperscan")
    from memtree_plugins.redaction.catalogue import matcher
    from memtree_plugins.redaction.engine import lowered
    from memtree_plugins.redaction.scan import one_byte_per_char

    engine = Engine(builtin())
    assert engine._keyword_pass is not None
    pick = random.Random(rng.randrange(2**32))
    words = engine._keyword_words
    bits = [*pick.sample(words, 40), *(w.upper() for w in pick.sample(words, 20)), " ", "\n", "é", "İ", "x"]
    keyworded = [i for i, c in enumerate(engine.rules) if c.rule.keywords]
    for _ in range(400):
        text = "".join(pick.choices(bits, k=pick.randint(0, 30)))
        selected = sorted(pick.sample(range(len(engine.rules)), 30) + keyworded[:5])
        data = one_byte_per_char(text.encode("utf-8"))
        low = lowered(text)
        expected = [i for i in selected if not engine.rules[i].rule.keywords
                    or any(k in low for k in engine.rules[i].rule.keywords)]
        assert sum(len(engine.rules[i].rule.keywords) for i in selected) >= matcher.KEYWORDS_ONE_PASS
        assert engine._with_keywords(selected, text, data) == expected, text
