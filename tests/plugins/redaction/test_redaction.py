"""Redaction rules at the rule level, through App.redact with the built-in plugin set.

The leaky fixture (eval/leaky/cases.json) lists secrets that must not survive; eval/leaky/clean/ must come
out byte-identical.  Each built-in rule has a sample below built from seeded random values (the same on
every run), and a meta-test keeps that table complete.
"""

from __future__ import annotations

import base64
import json
import random
import string
import uuid
from pathlib import Path

import pytest

from memtree_core.hookspecs import hookimpl
from memtree_core.plugins import build
from memtree_core.settings import Settings
from memtree_plugins.redaction.engine import PatternRule, shannon_entropy
from memtree_plugins.redaction.rules import RULES, RULESET_VERSION

LEAKY = Path(__file__).resolve().parents[3] / "eval" / "leaky"
CASES = json.loads((LEAKY / "cases.json").read_text())["cases"]
CLEAN = sorted((LEAKY / "clean").iterdir())
rng = random.Random(20261202)  # seeded: a test must not pass or fail by chance


@pytest.fixture(autouse=True)
def _same_draws_in_any_order() -> None:
    """Each test draws from rng as if it ran first: pytest-randomly and xdist change the order."""
    rng.seed(20261202)
AN = string.ascii_letters + string.digits
HEX = "0123456789abcdef"


def _uuid() -> uuid.UUID:
    return uuid.UUID(int=rng.getrandbits(128), version=4)


def r(n: int, alphabet: str = AN) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


@pytest.mark.parametrize("case", CASES, ids=[c["file"] for c in CASES])
def test_leaky_fixture_comes_out_clean(app, case):
    text = (LEAKY / case["file"]).read_text()
    out, hits = app.redact(text)
    leaked = [s for s in case["secrets"] if s in out]
    assert not leaked, f"{case['file']}: {len(leaked)} secrets survived, e.g. {leaked[0][:12]}..."
    assert hits and all(n > 0 for n in hits.values())
    assert app.redact(out) == (out, {}), "redacting twice must equal redacting once"


@pytest.mark.parametrize("path", CLEAN, ids=[p.name for p in CLEAN])
def test_clean_corpus_is_untouched(app, path):
    text = path.read_text()
    assert app.redact(text) == (text, {})


def test_every_builtin_rule_is_registered_by_name(app):
    names = app.plugins.redaction_rules.names()
    # dense.py's and views.py's rules run first (their priorities), then the catalogue's scan of the incoming
    # text, envdump.py's rule, memtree's rules, the catalogue's redaction, and entropy.py's bare random tokens
    assert names == ["dense-line", "decoded-view", "gitleaks-scan", "env-dump"] + [rule.name for rule in RULES] + \
        ["gitleaks", "high-entropy-token"]
    assert len(set(names)) == len(names) >= 50
    assert all(app.plugins.redaction_rules.entry(n).plugin == "redaction" for n in names)
    assert RULESET_VERSION


def _pem(kind: str) -> str:
    body = base64.b64encode(rng.randbytes(600)).decode()
    return f"-----BEGIN {kind}-----\n" + "\n".join(body[i:i + 64] for i in range(0, len(body), 64)) + \
        f"\n-----END {kind}-----"


def _jwt() -> str:
    enc = lambda b: base64.urlsafe_b64encode(b).decode().rstrip("=")  # noqa: E731
    return enc(b'{"alg":"HS256","typ":"JWT"}') + "." + enc(json.dumps({"sub": r(8)}).encode()) + "." + enc(rng.randbytes(32))


# rule name -> (text containing a secret, the secret).  Built from the seeded generator.
def samples() -> dict[str, tuple[str, str]]:
    s: dict[str, tuple[str, str]] = {}

    def add(name: str, secret: str, template: str = "value: {s} end") -> None:
        s[name] = (template.format(s=secret), secret)

    key = _pem("RSA PRIVATE KEY")
    s["private-key"] = (f"$ cat id_rsa\n{key}\n$ ls", key.splitlines()[2])
    b64key = base64.b64encode(_pem("EC PRIVATE KEY").encode()).decode()
    add("private-key-base64", b64key, "    client-key-data: {s}\n")
    ppk = "\n".join(base64.b64encode(rng.randbytes(48)).decode() for _ in range(4))
    s["putty-private-key"] = (f"PuTTY-User-Key-File-3: ssh-rsa\nPrivate-Lines: 4\n{ppk}\nPrivate-MAC: {r(64, HEX)}\n",
                              ppk.splitlines()[1])
    add("age-secret-key", "AGE-SECRET-KEY-1" + r(58, "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L"))
    add("aws-access-key-id", "AKIA" + r(16, string.ascii_uppercase + "234567"))
    add("aws-secret-access-key", r(40, AN + "/+"), "aws_secret_access_key = {s}\n")
    add("aws-session-token", "IQoJb3JpZ2luX2Vj" + r(200, AN + "/+"), "creds {s} ok")
    add("aws-mws-key", f"amzn.mws.{_uuid()}")
    add("google-api-key", "AIza" + r(35, AN + "_-"))
    add("google-oauth", "GOCSPX-" + r(28, AN + "_-"))
    add("gcp-service-account-key-id", r(40, HEX), '  "private_key_id": "{s}",\n')
    add("firebase-cloud-messaging", "AAAA" + r(7) + ":APA91b" + r(134, AN + "_-"))
    add("azure-connection-string", base64.b64encode(rng.randbytes(64)).decode(),
        "DefaultEndpointsProtocol=https;AccountName=x;AccountKey={s};EndpointSuffix=core.windows.net")
    add("azure-ad-client-secret", r(3) + "8Q~" + r(34, AN + "_~-"), 'secret "{s}"')
    add("alibaba-access-key", "LTAI" + r(20))
    add("digitalocean-token", "dop_v1_" + r(64, HEX))
    add("heroku-api-key", "HRKU-AA" + r(58, AN + "_-"))
    add("cloudflare-origin-ca-key", "v1.0-" + r(24, HEX) + "-" + r(146, HEX))
    add("databricks-token", "dapi" + r(32, HEX))
    add("vault-token", "hvs." + r(90, AN + "_-"))
    add("terraform-cloud-token", r(14) + ".atlasv1." + r(67, AN + "_-"))
    add("pulumi-token", "pul-" + r(40, HEX))
    add("doppler-token", "dp.st." + r(43))
    add("flyio-token", "fo1_" + r(43, AN + "_-"))
    add("netlify-token", "nfp_" + r(36))
    add("render-api-key", "rnd_" + r(32))
    add("planetscale-token", "pscale_tkn_" + r(43, AN + "_"))
    add("supabase-key", "sbp_" + r(40, HEX))
    add("tailscale-key", "tskey-api-k" + r(10) + "CNTRL-" + r(32))
    add("github-pat", "ghp_" + r(36))
    add("github-oauth-token", "gho_" + r(36))
    add("github-app-token", "ghs_" + r(36))
    add("github-refresh-token", "ghr_" + r(76))
    add("github-fine-grained-pat", "github_pat_11" + r(20, string.ascii_uppercase) + "_" + r(59))
    add("gitlab-token", "glpat-" + r(20, AN + "_-"))
    add("atlassian-token", "ATATT3xFfGF0" + r(180, AN + "_-"))
    add("npm-token", "npm_" + r(36))
    add("pypi-token", "pypi-AgEIcHlwaS5vcmc" + r(120, AN + "_-"))
    add("rubygems-token", "rubygems_" + r(48, HEX))
    add("nuget-api-key", "oy2" + r(43, string.ascii_lowercase + string.digits))
    add("clojars-token", "CLOJARS_" + r(60, string.ascii_lowercase + string.digits))
    add("dockerhub-token", "dckr_pat_" + r(27, AN + "_-"))
    add("jfrog-token", "AKCp" + r(69))
    add("sonarqube-token", "sqp_" + r(40, HEX))
    add("sourcegraph-token", "sgp_" + r(16, HEX) + "_" + r(40, HEX))
    add("buildkite-token", "bkua_" + r(40, HEX))
    add("circleci-token", "CCIPAT_" + r(22) + "_" + r(40, HEX))
    add("octopus-deploy-key", "API-" + r(26, string.ascii_uppercase + string.digits))
    add("harness-token", "pat." + r(22, AN + "_-") + "." + r(24, HEX) + "." + r(20))
    add("anthropic-api-key", "sk-ant-api03-" + r(93, AN + "_-") + "AA")
    add("openrouter-api-key", "sk-or-v1-" + r(64, HEX))
    add("openai-api-key", "sk-proj-" + r(80, AN + "_-"))
    add("huggingface-token", "hf_" + r(34, string.ascii_letters))
    add("groq-api-key", "gsk_" + r(52))
    add("xai-api-key", "xai-" + r(80))
    add("perplexity-api-key", "pplx-" + r(48))
    add("replicate-api-token", "r8_" + r(37))
    add("langsmith-api-key", "lsv2_pt_" + r(32, HEX) + "_" + r(10, HEX))
    add("slack-token", f"xoxb-{rng.randint(10**11, 10**12)}-{rng.randint(10**12, 10**13)}-{r(24)}")
    add("slack-webhook", f"T{r(8, string.ascii_uppercase)}/B{r(10, string.ascii_uppercase)}/{r(24)}",
        "POST https://hooks.slack.com/services/{s} 200")
    add("discord-webhook", f"{rng.randint(10**17, 10**18)}/{r(68, AN + '_-')}",
        "https://discord.com/api/webhooks/{s}")
    add("discord-bot-token", "M" + r(25) + "." + r(6, AN + "_-") + "." + r(38, AN + "_-"), "DISCORD bot: {s}")
    add("teams-webhook", f"{_uuid()}@{_uuid()}/IncomingWebhook/{r(32, HEX)}/{_uuid()}",
        "https://acme.webhook.office.com/webhookb2/{s}")
    add("telegram-bot-token", f"{rng.randint(10**8, 10**9 - 1)}:AA{r(33, AN + '_-')}")
    add("sendgrid-api-key", "SG." + r(22, AN + "_-") + "." + r(43, AN + "_-"))
    add("twilio-api-key", "SK" + r(32, HEX))
    add("mailgun-api-key", "key-" + r(32, HEX))
    add("mailchimp-api-key", r(32, HEX) + "-us14")
    add("postman-api-key", "PMAK-" + r(24, HEX) + "-" + r(34, HEX))
    add("linear-api-key", "lin_api_" + r(40))
    add("figma-token", "figd_" + r(40, AN + "_-"))
    add("notion-token", "ntn_" + r(11, string.digits) + r(35))
    add("airtable-token", "pat" + r(14) + "." + r(64, HEX))
    add("dropbox-token", "sl.u." + r(140, AN + "_-"))
    add("contentful-token", "CFPAT-" + r(43, AN + "_-"))
    add("typeform-token", "tfp_" + r(59, AN + "_"))
    add("frameio-token", "fio-u-" + r(64, AN + "_"))
    add("adobe-client-secret", "p8e-" + r(32))
    add("readme-api-key", "rdme_" + r(70, string.ascii_lowercase + string.digits))
    add("prefect-api-key", "pnu_" + r(36))
    add("onepassword-service-token", "ops_eyJ" + r(200, AN + "_-"))
    add("launchdarkly-key", f"sdk-{_uuid()}")
    add("stripe-secret-key", "sk_live_51" + r(97))
    add("stripe-webhook-secret", "whsec_" + r(32))
    add("square-token", "sq0csp-" + r(43, AN + "_-"))
    add("shopify-token", "shpat_" + r(32, HEX))
    add("plaid-access-token", f"access-production-{_uuid()}")
    add("shippo-token", "shippo_live_" + r(40, HEX))
    add("flutterwave-key", "FLWSECK_TEST-" + r(32, "abcdefgh0123456789") + "-X")
    add("easypost-key", "EZAK" + r(54))
    add("duffel-token", "duffel_live_" + r(43, AN + "_-"))
    add("facebook-access-token", "EAAG" + r(120))
    add("salesforce-access-token", "00D" + r(12) + "!" + r(96, AN + "._"))
    add("grafana-token", "glsa_" + r(32) + "_" + r(8, HEX))
    add("newrelic-key", "NRAK-" + r(27, string.ascii_uppercase + string.digits))
    add("sentry-token", "sntryu_" + r(64, HEX))
    add("mapbox-secret-token", "sk.eyJ" + r(90, AN + "_-."))
    add("okta-token", "00" + r(40, AN + "_-"), "OKTA_API_TOKEN: {s}\n")
    add("jwt", _jwt())
    add("url-credentials", r(20), "redis://default:{s}@cache.internal:6379/0")
    add("url-query-secret", r(32), "GET https://api.example.com/v1/items?limit=5&access_token={s} 200")
    add("auth-header", r(40), "> Private-Token: {s}\n")
    add("bearer-token", r(48, AN + "._-"), "use Bearer {s} for the call")
    add("cookie", r(40, AN + "_-"), "< Set-Cookie: sid={s}; Path=/; HttpOnly\n")
    add("netrc-password", r(16, AN + "!#%"), "machine example.org\n  login me\n  password {s}\n")
    add("docker-config-auth", base64.b64encode(f"me:{r(20)}".encode()).decode(), '{{"auths": {{"r.io": {{"auth": "{s}"}}}}}}')
    add("npmrc-auth", str(_uuid()), "//registry.example/:_authToken={s}\n")
    add("kubeconfig-secret", r(6, "abcdefghij0123456789") + "." + r(16, "abcdefghij0123456789"), "  user:\n    token: {s}\n")
    add("cli-secret-flag", r(14), "$ psql --password={s} orders")
    add("cli-user-password", r(12), "$ curl -u admin:{s} https://jenkins/api")
    add("login-password-flag", r(18), "$ docker login -u me -p {s} ghcr.io")
    add("env-assignment", "Summer2024!", "DB_PASSWORD={s}\n")
    add("url-encoded-credentials", r(14, AN + "!~*"), "GET /connect?dsn=postgres%3A%2F%2Fapp%3A{s}%40db%2Fapp 200")
    add("cli-short-password-flag", r(14), "$ mysql -u root -p{s} orders")
    add("aws-secret-string", r(20, AN + "!#"), '{{"Name": "prod/db", "SecretString": "{s}"}}')
    add("env-colon-assignment", "Summer2024!", "DB_PASSWORD:      {s}\n")
    add("yaml-next-line-secret", "Summer2024!", "db:\n  password:\n    {s}\n")
    add("xml-secret-element", r(16, AN + "!#"), "<settings>\n  <password>{s}</password>\n</settings>")
    add("php-define-secret", r(40, AN + "!#^*"), "define('AUTH_KEY', '{s}');")
    add("name-value-secret", r(14, AN + "!#"), '  - name: DB_PASSWORD\n    value: "{s}"\n')
    add("sql-password", r(14, AN + "!#"), "CREATE USER 'app'@'%' IDENTIFIED BY '{s}';")
    add("kv-table-secret", r(20), "Key         Value\n---         -----\npassword    {s}\nttl         768h\n")
    add("k8s-secret-data", base64.b64encode(b"hunter22").decode(), "kind: Secret\ndata:\n  root: {s}\n")
    add("base64-secret", base64.b64encode(f"DB_HOST=db\nDB_PASSWORD={r(12)}\n".encode()).decode(),
        "$ base64 -w0 .env\n{s}\n")
    add("continued-secret", r(20, AN + "/+"), "export AWS_SECRET_ACCESS_KEY=\\\n  {s}\n")
    add("secret-assignment", r(24, AN + "!#"), 'config = {{"clientSecret": "{s}"}}')
    return s


SAMPLES = samples()


def test_every_rule_has_a_family_sample():
    assert set(SAMPLES) == {rule.name for rule in RULES}


@pytest.mark.parametrize("name", list(SAMPLES))
def test_family(app, name):
    text, secret = SAMPLES[name]
    out, hits = app.redact(text)
    assert secret not in out
    assert name in hits, f"expected rule {name} to fire, got {hits}"
    assert f"[REDACTED:{name}]" in out
    assert app.redact(out) == (out, {})


@pytest.mark.parametrize("text", [
    "password = getpass()", 'token = os.environ["TOKEN"]', "api_key=settings.API_KEY", "secret_key: str",
    "password: str = Field(..., min_length=8)", "const apiKey = process.env.OPENAI_API_KEY;",
    'headers = {"Authorization": f"Bearer {token}"}', "API_KEY=${API_KEY}", "SECRET=<your-key>",
    "TOKEN=changeme", "PASSWORD=xxxxxxxx", "OPENAI_API_KEY=your_api_key_here", "X_TOKEN=REDACTED",
    "DB_PASSWORD=***", "commit 3f786850e387550fdab836ed7e6dc881de23001b",
    "fixed in 3f78685 and a1b2c3d", "id 550e8400-e29b-41d4-a716-446655440000", "job 01ARZ3NDEKTSV4RRFFQ69G5FAV",
    "image@sha256:" + "ab" * 32, '"integrity": "sha512-' + "A" * 20 + base64.b64encode(rng.randbytes(64)).decode() + '"',
    "STRIPE_SECRET_KEY=sk_test_xxxxxxxxxxxxxxxxxxxxxxxx", "--token TOKEN   the API token",
    "--password string   Password", "docker login --password-stdin", "[REDACTED:github-pat]",
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGm9dDkZ9mMKvu2zY0Ht8b2b4sQ2n5vJ0yRk1f3u7sJq dev@box",
    "SSH_AUTH_SOCK=/tmp/ssh-abc/agent.1", "TOKENIZERS_PARALLELISM=false", "JWT_EXPIRES_IN=3600",
    "INFO auth:session.py:41 session started", "-----BEGIN RSA PRIVATE KEY-----\n...\n-----END RSA PRIVATE KEY-----",
    "https://user@example.com/repo.git", "postgres://postgres:${POSTGRES_PASSWORD}@localhost/app",
])
def test_false_positive_guards(app, text):
    assert app.redact(text) == (text, {})


def test_entropy_threshold_separates_words_from_random():
    assert shannon_entropy("hunter2hunter2hunter2") < 3.0 <= shannon_entropy(r(16))


def test_quotes_and_context_are_kept(app):
    pw = r(20)
    out, _ = app.redact(f"postgres://app:{pw}@db.internal:5432/x and SECRET_KEY = '{r(40)}'")
    assert out.startswith("postgres://app:[REDACTED:url-credentials]@db.internal:5432/x")
    assert out.endswith("SECRET_KEY = '[REDACTED:env-assignment]'")


PATHOLOGICAL = ["a", "=", "KEY=", "password=", "token: ", "-----BEGIN RSA PRIVATE KEY-----\n", "https://u:",
                "eyJabcdefgh.", "machine h login u ", "sk-", "QUJD", "Cookie: a=", "a:b@", "export A_TOKEN",
                "--password ", "_auth=", "Private-Lines: 1\n", "xoxb-", "0123456789abcdef", '"password": "',
                "Authorization: ", "TOKENTOKEN", "pass" * 3 + "\n"]


@pytest.mark.timeout(60)
@pytest.mark.parametrize("seed", PATHOLOGICAL)
def test_pathological_100kb_input_finishes(app, seed):
    # No timing assertion (see eval/bench/redaction.py); the timeout catches catastrophic backtracking.
    text = (seed * (100_000 // len(seed) + 1))[:100_000]
    out, _ = app.redact(text)
    assert app.redact(out)[0] == out


class MyRules:
    """A third-party plugin: adds a rule and withdraws a built-in one by name."""

    @hookimpl
    def memtree_register_redaction_rules(self, register):
        import re

        register(PatternRule("acme-token", re.compile(r"acme_[A-Za-z0-9]{32}"), literals=("acme_",)))
        register.remove("mailgun-api-key")


def test_third_party_plugin_adds_and_removes_rules(home, project):
    from memtree_core.app import App

    app = App.open(project, extra=[("myrules", MyRules())])
    try:
        rules = app.plugins.redaction_rules
        assert "acme-token" in rules and rules.entry("acme-token").plugin == "myrules"
        assert "mailgun-api-key" not in rules and rules.removed["mailgun-api-key"] == "myrules"
        acme, mailgun = "acme_" + r(32), "key-" + r(32, HEX)
        out, hits = app.redact(f"{acme} {mailgun}")
        assert acme not in out and hits.get("acme-token") == 1
        assert mailgun in out  # its built-in rule is gone
    finally:
        app.close()


def test_replacing_a_builtin_rule_by_name(home):
    import re

    class Stricter:
        @hookimpl
        def memtree_register_redaction_rules(self, register):
            register(PatternRule("jwt", re.compile(r"eyJ\S+"), literals=("eyJ",)), replaces=True)

    plugins = build(Settings(), {"MEMTREE_LOAD_PLUGINS": ""}, extra=[("stricter", Stricter())])
    entry = plugins.redaction_rules.entry("jwt")
    assert entry.plugin == "stricter" and entry.replaced == "redaction"


# ---- the shared scan (scan.py) must give every rule exactly what its own search gave ------------------

from memtree_plugins.redaction import scan  # noqa: E402


def _redact_all(rules, text: str) -> tuple[str, list[int]]:
    hits = []
    for rule in rules:
        text, n = rule.redact(text)
        hits.append(n)
    return text, hits


def _per_rule(rules, text: str, monkeypatch) -> tuple[str, list[int]]:
    with monkeypatch.context() as m:
        m.setattr(scan, "enabled", False)
        return _redact_all(rules, text)


def _glued(seed: int, n: int) -> list[str]:
    """Samples and fixture lines glued with little or nothing between them, so that redactions touch,
    merge, and create or destroy each other's keywords (a mark such as [REDACTED:mailgun-api-key] holds
    'key')."""
    pick = random.Random(seed)
    leaky = [line for c in CASES for line in (LEAKY / c["file"]).read_text().splitlines(keepends=True)]
    pieces = [t for t, _ in SAMPLES.values()] + leaky
    seps = ["", "", " ", "\n", "=", ": ", '"', "&", "KEY=", "token: ", "-----", "://"]
    return ["".join(p + pick.choice(seps) for p in pick.choices(pieces, k=pick.randint(2, 14))) for _ in range(n)]


def test_scan_available():
    assert scan.available(), "ahocorasick-rs is a dependency: pip install -e ."


@pytest.mark.parametrize("name", [c["file"] for c in CASES] + [p.name for p in CLEAN] + ["glued", "everything"])
def test_scanned_redaction_equals_per_rule_search(name, monkeypatch):
    if name == "glued":
        texts = _glued(rng.randrange(2**32), 150)
    elif name == "everything":
        texts = ["\n".join((LEAKY / c["file"]).read_text() for c in CASES) + "".join(p.read_text() for p in CLEAN)]
    else:
        texts = [(LEAKY / name if (LEAKY / name).exists() else LEAKY / "clean" / name).read_text()]
    for text in texts:
        assert _redact_all(RULES, text) == _per_rule(RULES, text, monkeypatch), text[:200]


def _find_all(hay: str, needle: str) -> list[int]:
    out, i = [], hay.find(needle)
    while i >= 0:
        out.append(i)
        i = hay.find(needle, i + 1)
    return out


def test_scan_positions_follow_every_redaction():
    needles = scan.current_needles()
    names = needles.literals + needles.keywords
    checked = 0
    for text in _glued(rng.randrange(2**32), 40):
        for rule in RULES:
            text, _ = rule.redact(text)
            sc = scan.scan_of(text, needles)  # the version the rules built, not a fresh scan
            low = text.lower()
            for nid, needle in enumerate(names):
                expected = _find_all(text if nid < needles.n_literals else low, needle)
                if expected or nid in sc.present:
                    assert sc.positions(nid) == expected, (rule.name, needle)
                    checked += 1
    assert checked > 1000


def test_hyperscan_needles_equal_the_automata():
    """The Hyperscan pass over ASCII text finds every needle where the automata find it (keywords in any
    case, overlapping ones, needles glued to each other); other text goes to the automata."""
    pytest.importorskip("hyperscan")
    needles = scan.current_needles()
    assert needles._hs is not None  # the hyperscan module is there: captures take the one-pass search
    automata = scan.Needles(needles.literals, needles.keywords, use_hyperscan=False)
    pick = random.Random(rng.randrange(2**32))
    words = needles.literals + needles.keywords + [k.upper() for k in needles.keywords] + [" ", "\n", "x"]
    texts = _glued(pick.randrange(2**32), 60) + ["".join(pick.choices(words, k=80)) for _ in range(300)]
    texts += ["\u212aEY=" + r(30) + " token: " + r(30), "Ünïcödé PASSWORD=" + r(20), "tok\u212aen",
              "→ ✓ 密码 password: '" + r(24) + "' 😀 sk-ant-api03-" + r(40) + " €", "ſecret=" + r(20)]
    texts += ["".join(pick.choices(words + ["é", "→", "😀", "\u212a", "ſ"], k=80)) for _ in range(300)]
    hs_taken = 0
    for text in texts:
        low = text.lower()
        if len(low) != len(text):
            continue
        assert needles.find(text, low) == automata.find(text, low), text[:200]
        hs_taken += needles._hs.find(text) is not None
    assert hs_taken >= 600


def test_distinct_literals_and_the_env_dump_gate(monkeypatch):
    """DistinctLiterals counts the distinct words that occur anywhere (one Hyperscan pass); the env-dump rule
    uses it only to skip text with too few variable names, so what it finds is what it found without it."""
    pytest.importorskip("hyperscan")
    from memtree_plugins.redaction import envdump

    pick = random.Random(rng.randrange(2**32))
    words = ["PATH", "MANPATH", "HOME", "USER", "LANG", "LC_ALL", "TERM", "SHELL"]
    gate = scan.DistinctLiterals(words)
    bits = [*words, "_", "x", "=", " ", "\n", "é", "→"]
    texts = ["".join(pick.choices(bits, k=pick.randint(0, 30))) for _ in range(3000)]
    texts += ["MANPATH=/x", "PATH=/bin HOME=/h USER=u LANG=C", "\udcff PATH HOME"]
    env = {"PATH": "/bin", "HOME": "/h", "USER": "u", "LANG": "C", "LC_ALL": "C", "TERM": "xterm",
           "SHELL": "/bin/sh", "API_TOKEN": "tok-" + r(24)}
    names = envdump._names(env)
    for text in texts:
        count = gate.count(text)
        if "\udcff" in text:
            assert count is None  # lone surrogates: the caller searches as before
            continue
        assert count == sum(w in text for w in words), text
        for enough in (None, 1, 2, 3, 4):
            with_gate = names.find(text, enough)
            with monkeypatch.context() as m:
                m.setattr(scan.DistinctLiterals, "count", lambda self, text: None)
                assert with_gate == names.find(text, enough), (text, enough)


def test_one_byte_per_char():
    """Byte offsets of the one-byte form are character offsets: ASCII kept, every other character (a lone
    surrogate too) one 0x80 byte."""
    pick = random.Random(rng.randrange(2**32))
    chars = ["a", "\n", "\x7f", "\x80", "é", "→", "😀", "\udcff", "\U0010ffff", "\u212a"]
    for _ in range(500):
        text = "".join(pick.choices(chars, k=pick.randint(0, 40)))
        expected = bytes(ord(c) if c.isascii() else 0x80 for c in text)
        assert scan.one_byte_per_char(text.encode("utf-8", "surrogatepass")) == expected


@pytest.mark.parametrize("text", [
    # back-to-back matches: one rule's edits touch each other
    _pem("RSA PRIVATE KEY") + _pem("EC PRIVATE KEY") + "\nghp_" + r(36) + "ghp_" + r(36),
    # str.lower() lengthens "İ": the scan steps aside and every rule searches on its own
    "İstanbul DB_PASSWORD=" + r(12) + " ghp_" + r(36),
    # a lone surrogate (surrogateescape'd output) cannot go through the automaton
    "out \udcff AKIA" + r(16, string.ascii_uppercase) + " token: " + r(30),
    # one rule redacting more than scan._MAX_EDITS times: the next rule scans afresh
    " ".join(f"ghp_{r(36)} token: {r(30)}" for _ in range(100)),
    # non-ASCII around secrets: character, not byte, positions
    "→ ✓ 密码 password: '" + r(24) + "' ünïcödé sk-ant-api03-" + r(40) + " €",
])
def test_scan_edge_texts_match_per_rule_search(text, monkeypatch):
    out, hits = _redact_all(RULES, text)
    assert (out, hits) == _per_rule(RULES, text, monkeypatch)
    assert sum(hits) >= 2


def test_rules_the_scan_does_not_know_still_run(home, project, monkeypatch):
    """A third-party rule created after the automaton was built, a rule without keywords, a rule that is not
    a PatternRule, and a PatternRule subclass with its own applies() all run in order."""
    import re

    from memtree_core.app import App

    class Upper:  # not a PatternRule: changes the text without telling the scan
        name = "upper-marker"

        def redact(self, text):
            return (text.replace("marker-x", "MARKER-X"), 1) if "marker-x" in text else (text, 0)

    class OnlyShort(PatternRule):
        def applies(self, text):
            return len(text) < 10_000

    late = PatternRule("late-token", re.compile(r"zq9_[a-z0-9]{20}"), literals=("zq9_",), anchored=True)
    bare = PatternRule("bare-shape", re.compile(r"\bVV[0-9]{12}\b"))  # no keywords: runs everywhere
    sub = OnlyShort("only-short", re.compile(r"MARKER-X-[0-9]{8}"), literals=("MARKER-X",))

    class Late:
        @hookimpl
        def memtree_register_redaction_rules(self, register):
            for rule in (Upper(), sub, late, bare):
                register(rule)

    app = App.open(project, extra=[("late", Late())])
    try:
        tok, shape, digits = "zq9_" + r(20, string.ascii_lowercase + string.digits), "VV" + r(12, string.digits), r(8, string.digits)
        text = f"a {tok} b {shape} c marker-x-{digits} ghp_{r(36)}"
        out, hits = app.redact(text)
        assert tok not in out and shape not in out and digits not in out, out
        assert {"late-token", "bare-shape", "only-short", "upper-marker", "github-pat"} <= set(hits)
        with monkeypatch.context() as m:
            m.setattr(scan, "enabled", False)
            assert app.redact(text) == (out, hits)
        assert app.redact("x" * 10_001 + f" MARKER-X-{digits}")[1].get("only-short") is None  # its applies()
    finally:
        app.close()


# ---- what real tools print (recall) and code that must come back as it is (precision) -----------------

def _read_gutter(lines: list[str], first: int = 187) -> str:
    return "\n".join(f"{first + i:>6}→{line}" for i, line in enumerate(lines))


def _b64(s: str) -> str:
    return base64.b64encode(s.encode()).decode()


PW, TOK, DOTTED = "Tiger181$", r(32), f"{r(12)}.{r(9)}.{r(14)}"
KEY_LINES = [base64.b64encode(rng.randbytes(48)).decode() for _ in range(8)]
SHAPES = {
    "read-gutter-netrc": (_read_gutter(["machine api.example.com", "  login bob", f"  password {TOK}"]), TOK),
    "read-gutter-env": (_read_gutter([f"DB_PASSWORD={PW}"]), PW),
    "grep-n-env": (f"config/.env:12:DB_PASSWORD={PW}", PW),
    "diff-env": (f"@@ -1 +1 @@\n-DB_PASSWORD=old\n+DB_PASSWORD={PW}", PW),
    "diff-netrc": (f"+machine h.example\n+  login me\n+  password {TOK}", TOK),
    "json-array-env": (f'"Env": ["PATH=/usr/bin", "DB_PASSWORD={PW}"]', PW),
    "heroku-config": (f"=== app Config Vars\nDB_PASSWORD:      {PW}\nREDIS_URL:        redis://h:6379", PW),
    "compose-environment": (f"    environment:\n      POSTGRES_PASSWORD: {PW}", PW),
    "url-special-password": (f"postgres://app:{r(8)}.~*^!%21x@db:5432/app", None),
    "url-empty-user": (_read_gutter([f"url: redis://:{TOK}@cache:6379"]), TOK),
    "url-encoded-dsn": (f"dsn=postgres%3A%2F%2Fapp%3A{TOK}%40db%2Fapp", TOK),
    "bearer-with-dots": (f"Authorization: Bearer {DOTTED}", DOTTED),
    "bearer-with-dots-prose": (f"use Bearer {DOTTED} here", DOTTED),
    "nginx-basic": (_read_gutter([f'    proxy_set_header Authorization "Basic {_b64("admin:" + PW)}";']),
                    _b64("admin:" + PW)),
    "json-in-json": (json.dumps({"msg": json.dumps({"user": "app", "password": PW})}), PW),
    "json-in-json-in-json": (json.dumps({"a": json.dumps({"b": json.dumps({"client_secret": TOK})})}), TOK),
    "aws-secret-string-json": (json.dumps({"Name": "db", "SecretString": json.dumps({"password": "hunter22"})}),
                               "hunter22"),
    "pgpassword-glued": (f"PGPASSWORD={PW} psql -h db app", PW),
    "dbpass": (f"DBPASS={PW}", PW),
    "clientsecret": (f"CLIENTSECRET={PW}", PW),
    "ngrok-authtoken": (f"NGROK_AUTHTOKEN={TOK}", TOK),
    "jwtsecret": (f"JWTSECRET={PW}", PW),
    "sshpass": (f"$ sshpass -p {PW} ssh root@10.0.0.5", PW),
    "mysql-glued": (f"$ mysql -h db -u root -p{PW} app", PW),
    "redis-cli": (f"$ redis-cli -h cache -a {PW} ping", PW),
    "redis-conf": (_read_gutter(["bind 127.0.0.1", f"requirepass {PW}"]), PW),
    "password-flag": (f"$ tool --password {PW} sync", PW),
    "yaml-next-line": (f"db:\n  password:\n    {PW}\n  port: 5432", PW),
    "continued-export": (f"RUN ./configure \\\n  --with-ssl \\\n  && export DB_PASSWORD=\\\n    {PW}\n", PW),
    "continuation-in-read": (_read_gutter(["ENV API_TOKEN=\\", f'    "{TOK}"']), TOK),
    "yaml-block-scalar": (_read_gutter(["auth:", "  client_secret: |", f"    {TOK}"]), TOK),
    "continuation": (f"docker run --rm \\\n  -e DB_PASSWORD={PW} \\\n  app:1", PW),
    "xml-element": (f"<server>\n  <password>{PW}</password>\n</server>", PW),
    "php-define": (f"define( 'DB_PASSWORD', '{PW}' );", PW),
    "base64-env-wrapped": ("$ base64 .env\n" + base64.encodebytes(
        f"DB_HOST=db\nDB_USER=app\nDB_PASSWORD={PW}\nLOG_LEVEL=info\nFEATURE=x\n".encode()).decode(), None),
    "k8s-secret-data": ("kind: Secret\ndata:\n  DB_PASSWORD: " + _b64(PW) + "\n  db-url: " +
                        _b64(f"postgres://app:{TOK}@db/app") + "\n", _b64(f"postgres://app:{TOK}@db/app")),
    "pem-body-no-begin": (_read_gutter([line[:64] for line in KEY_LINES], 220), KEY_LINES[3][:64]),
    "k8s-env-name-value": (f"        env:\n        - name: DB_PASSWORD\n          value: {PW}", PW),
    "ecs-name-value": (json.dumps({"environment": [{"name": "API_TOKEN", "value": TOK}]}), TOK),
    "dotnet-appsettings": (f'<add key="Password" value="{PW}" />', PW),
    "prefixed-password-flag": (f"$ app --db-password {PW} migrate", PW),
    "kotlin-annotated": (f'val password: String = "{PW}"', PW),
    "k8s-data-low-entropy": (_read_gutter(["kind: Secret", "data:", "  root: " + _b64("hunter22")]), _b64("hunter22")),
    "pem-body-grep": (f"keys/id_rsa:9:{KEY_LINES[5][:64]}", KEY_LINES[5][:64]),
}


@pytest.mark.parametrize("name", list(SHAPES))
def test_real_output_shape_is_redacted(app, name):
    text, secret = SHAPES[name]
    out, hits = app.redact(text)
    if secret is None:  # every long piece of the secret material must be gone
        secret = text
    pieces = [secret] if secret in text else []
    if name == "url-special-password":
        pieces = [text.split("app:", 1)[1].split("@", 1)[0]]
    if name == "base64-env-wrapped":
        pieces = [line for line in text.splitlines()[1:] if len(line) >= 20]
    assert pieces and not [p for p in pieces if p in out], out
    assert hits, out
    assert app.redact(out) == (out, {})


CODE = [
    # a continuation whose next line is a flag, a command or a path, not a secret
    "CFLAGS=\\\n  -O2 -Wall\n", "RUN apt-get update && \\\n    apt-get install -y curl\n",
    "export TOKEN_FILE=\\\n  /etc/secrets/token.txt\n",
    # lines of httpx's own code
    "    auth: AuthTypes | None = None,", "        auth = (url.username, url.password)",
    '            v = to_bytes_or_str("[secure]", match_type_of=v)',
    'SENSITIVE_HEADERS = {"authorization", "proxy-authorization"}',
    # found in released library sources
    "        token = b64encode(userpass).decode()", "    bypass = proxy_bypass(parsed.hostname)",
    "      request.withCredentials = !!_config.withCredentials;", "        withCredentials = 'same-origin',",
    '  const isCredentialsSupported = "credentials" in Request.prototype;', "    token: token,",
    "  token: CancelToken;", "    this._passThroughOptions = !!passThrough;", "      var key = utils$1.findKey(self, lHeader);",
    'SESSION_KEY = "_auth_user_id"', 'AUTH_USER_MODEL = "auth.User"', 'REASON_CSRF_TOKEN_MISSING = "CSRF token missing."',
    "VALID_KEY_CHARS = string.ascii_lowercase + string.digits", 'HEX_PAT = "[0-9A-Fa-f]{1,4}"',
    "POLICY_CREATE_SECRET = 0x00000020", 'OPENSSH_AUTH_MAGIC = b"openssh-key-v1\\x00"',
    "    MSG_USERAUTH_GSSAPI_TOKEN: _parse_userauth_gssapi_token,",
    '    MSG_USERAUTH_GSSAPI_TOKEN: "userauth-gssapi-token",', "        self._password = raw_password",
    '    auth_protocol = "MIT-MAGIC-COOKIE-1"', "ENV_VAR_AUTH_TOKEN = 'AWS_CONTAINER_AUTHORIZATION_TOKEN'",
    'key_salt = "django.contrib.auth.tokens.PasswordResetTokenGenerator"',
    '    cache_key = "views.decorators.cache.cache_page.%s.%s" % (',
    "        # Run the default password hasher once to reduce the timing",
    "    # `ps` on old Unix flavors but --password suffers from the same",
    "    key:\n        The time-series key.", "    dollarToken = +dollarToken;",
    '        token = "%HOMEPATH%\\\\" + token[2:]', "get_items(key='foo.bar.ANYTHING.baz')",
    'e.cookie=function(n,t){return document.cookie=n+"="+t},token:null',
    "  <password>${env.DEPLOY_PASSWORD}</password>",
    "kind: ConfigMap\ndata:\n  mode: fast\n  name: test\n  level: info1234\n",
    "    def set(self, name: KeyT, value: EncodableT,", "token: _StrPathToken",
    "engine = create_engine('postgresql+psycopg2://scott:tiger@localhost/test')",
    """qtoken = '(?:"[^"]+"|[A-Za-z0-9_]+?)'""", "url = 'https://jo%40email.com:a%20secret@example.com'",
]


@pytest.mark.parametrize("text", CODE)
def test_code_comes_back_as_it_is(app, text):
    assert app.redact(text) == (text, {})


def test_a_certificate_body_is_not_a_key():
    cert = "-----BEGIN CERTIFICATE-----\n" + "\n".join(line[:64] for line in KEY_LINES) + "\n-----END CERTIFICATE-----"
    from memtree_plugins.redaction.encoded import EncodedSecrets

    assert EncodedSecrets(lambda: RULES).redact(cert) == (cert, 0)


def test_base64_candidates_are_the_long_runs():
    """Every maximal run of base64 characters of MIN_RUN or more, once, in order of first appearance (a
    diff's leading ``+`` dropped), whatever surrounds it: blanks, punctuation, text beyond ASCII."""
    import re

    from memtree_plugins.redaction import encoded

    def reference(text: str) -> list[str]:
        runs = re.findall(r"[A-Za-z0-9+/]{%d,}" % encoded.MIN_RUN, text)  # noqa: UP031 (greedy: maximal runs)
        return list(dict.fromkeys(run.removeprefix("+") for run in runs))

    pick = random.Random(rng.randrange(2**32))
    parts = ["a", "Z", "9", "+", "/", "=", " ", "\n", "é", "→", "\udcff", "-", ".", "x" * 19, "y" * 20, "+" * 21,
             r(40), r(19)]
    texts = ["".join(pick.choices(parts, k=pick.randint(0, 60))) for _ in range(2000)]
    texts += [t for t, _ in SAMPLES.values()] + ["a" * 20, "+" + "a" * 19, " " + "b" * 25 + " "]
    for text in texts:
        assert list(encoded.candidates(text)) == reference(text), text


def test_harmless_base64_is_kept(app):
    text = "data: " + _b64("just some configuration text, nothing secret at all") + "\n"
    assert app.redact(text) == (text, {})


def test_decoding_is_bounded(app):
    # 4 MB of base64-looking text: the candidate and decode caps keep this to one pass
    from memtree_plugins.redaction import encoded

    blob = "\n".join(_b64(f"line {i} of harmless text padding padding") for i in range(60_000))
    assert len(blob) > encoded.MAX_DECODED * 4
    out, _ = app.redact(blob)
    assert out == blob


def test_many_encoded_events_only_the_secret_one_goes(app):
    # structured events, each base64-encoded on its own line (a queue dump): judged in one pass
    pick = random.Random(7)
    lines = [_b64(json.dumps({"event": "click", "user": pick.randint(1, 10**9), "page": f"/p/{i}"}))
             for i in range(1500)]
    lines[700] = _b64(json.dumps({"user": "svc", "password": PW}))
    text = "\n".join(lines)
    out, hits = app.redact(text)
    assert lines[700] not in out
    assert hits == {"base64-secret": 1}
    assert [a for a, b in zip(lines, out.splitlines(), strict=True) if a != b] == [lines[700]]


@pytest.mark.parametrize("text", [
    'token: "https://api.example.com/oauth/token",', 'authorization: "https://example.com/oauth2/authorize",',
    "  Authorization: `Bearer ${tokens.access_token}`,", "  token: JWT", "    token: sessionToken",
    '    "hashed_password": "$2b$12$EixZaYVK1fsbw1ZfbX3OXePaWxn96p36WQoeG6Lruj3vjPGga31lW",',
    '    "hashed_password": "fakehashedsecret2",',
])
def test_js_and_docs_code_comes_back_as_it_is(app, text):
    assert app.redact(text) == (text, {})
