"""Seeded corpora for the redaction gates: secrets in the shapes real tools print them, and strings that
must come back untouched.

Everything is drawn from one ``random.Random(seed)``, so a run is reproducible and a failure can be
replayed.  Records are written here (shapes taken from what gitleaks, trufflehog and detect-secrets test
for, and from what agents' tools print), not copied from anyone's fixtures.

A *shape* renders a secret into the lines a file or command would hold; a *view* renders those lines the
way a tool shows them (Read's line-number gutter, ``cat -n``, ``grep -n``, a diff, YAML indentation).
"""

from __future__ import annotations

import base64
import json
import random
import string
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass

AN = string.ascii_letters + string.digits
HEX = "0123456789abcdef"
SPECIAL = ".~*^%!#@$&+="


@dataclass(frozen=True)
class Record:
    shape: str
    view: str
    text: str
    secrets: tuple[str, ...]  # none of these may survive redaction


# ---- secret values ------------------------------------------------------------------------------------

WORDS = ("summer", "winter", "dragon", "monkey", "shadow", "falcon", "orange", "silver", "purple", "tiger",
         "rocket", "castle", "harbor", "meadow", "copper", "violet", "ginger", "pepper", "willow", "cobalt")


def human_password(rng: random.Random) -> str:
    """What people choose: a capitalised word, a year or number, a symbol."""
    word = rng.choice(WORDS)
    word = word.capitalize() if rng.random() < 0.7 else word
    return word + str(rng.randint(1970, 2029) if rng.random() < 0.6 else rng.randint(10, 999)) + rng.choice("!#$@*.?")


def random_token(rng: random.Random, n: int | None = None, alphabet: str = AN) -> str:
    n = n or rng.randint(16, 48)
    return "".join(rng.choice(alphabet) for _ in range(n))


def special_password(rng: random.Random) -> str:
    """A generated password with punctuation URL parsers trip on."""
    core = random_token(rng, rng.randint(10, 24), AN + SPECIAL)
    return core + rng.choice(".~*^%!") + random_token(rng, 3)


def vendor_token(rng: random.Random) -> str:
    return rng.choice([
        lambda: "ghp_" + random_token(rng, 36),
        lambda: "AKIA" + random_token(rng, 16, string.ascii_uppercase + "234567"),
        lambda: "xoxb-" + str(rng.randint(10**11, 10**12)) + "-" + str(rng.randint(10**12, 10**13)) + "-" + random_token(rng, 24),
        lambda: "sk_live_" + random_token(rng, 40),
        lambda: "glpat-" + random_token(rng, 20, AN + "_-"),
        lambda: "sk-proj-" + random_token(rng, 64, AN + "_-"),
    ])()


def dotted_token(rng: random.Random) -> str:
    """An opaque bearer token with dots (not a JWT): vendor session tokens look like this."""
    return ".".join(random_token(rng, rng.randint(6, 24), AN + "_-") for _ in range(rng.randint(2, 4)))


def any_secret(rng: random.Random) -> str:
    return rng.choice([human_password, random_token, special_password, vendor_token])(rng)


def literal_secret(rng: random.Random) -> str:
    """A secret that can stand unquoted in a shell word or a YAML scalar."""
    return rng.choice([human_password, random_token, vendor_token])(rng)


ENV_NAMES = ("DB_PASSWORD", "PGPASSWORD", "DBPASS", "MYSQL_ROOT_PASSWORD", "REDIS_PASSWORD", "CLIENTSECRET",
             "CLIENT_SECRET", "NGROK_AUTHTOKEN", "JWTSECRET", "JWT_SECRET", "API_KEY", "STRIPE_SECRET_KEY",
             "GITHUB_TOKEN", "SLACK_BOT_TOKEN", "SMTP_PASS", "ADMIN_PWD", "SECRET_KEY_BASE", "APP_SECRET",
             "AUTH_TOKEN", "PRIVATE_TOKEN", "SENTRY_AUTH_TOKEN", "DJANGO_SECRET_KEY", "RABBITMQ_DEFAULT_PASS",
             "MONGO_INITDB_ROOT_PASSWORD", "OPENAI_API_KEY", "GEO_API_KEY", "ENCRYPTION_KEY", "SESSION_SECRET")
YAML_KEYS = ("password", "db_password", "secret", "client_secret", "api_key", "apiKey", "token", "auth_token",
             "accessToken", "secretKey", "passphrase", "adminPassword", "bind_password")
SCHEMES = ("postgres", "postgresql", "mysql", "mongodb", "mongodb+srv", "redis", "rediss", "amqp", "amqps",
           "https", "ftp", "sftp", "ldap", "smtp", "mssql", "clickhouse", "nats", "kafka")
HOSTS = ("db.internal", "10.0.3.7", "cache.prod.svc", "mq.example.net", "cluster0.ab1cd.mongodb.net")


# ---- shapes: (rng) -> (lines, secrets) ------------------------------------------------------------------

Shape = Callable[[random.Random], tuple[list[str], list[str]]]


def env_line(rng: random.Random) -> tuple[list[str], list[str]]:
    s = any_secret(rng)
    name = rng.choice(ENV_NAMES)
    form = rng.choice(["{n}={s}", "export {n}={s}", 'export {n}="{s}"', "{n}='{s}'", "ENV {n}={s}", "set {n}={s}"])
    if any(c in s for c in " $`\"'\\") or ("{s}" in form and "'" not in form and '"' not in form and
                                            any(c in s for c in "#&;|")):
        form = "{n}='{s}'"
    return [form.format(n=name, s=s)], [s]


def heroku_config(rng: random.Random) -> tuple[list[str], list[str]]:
    s = literal_secret(rng)
    lines, secrets = ["=== my-app Config Vars"], [s]
    for name in rng.sample(ENV_NAMES, 3):
        v = literal_secret(rng)
        secrets.append(v)
        lines.append(f"{name + ':':<28}{v}")
    return lines, secrets


def yaml_value(rng: random.Random) -> tuple[list[str], list[str]]:
    s = literal_secret(rng)
    key = rng.choice(YAML_KEYS)
    quote = rng.choice(["", '"', "'"])
    return ["database:", "  host: db.internal", f"  {key}: {quote}{s}{quote}", "  port: 5432"], [s]


def yaml_next_line(rng: random.Random) -> tuple[list[str], list[str]]:
    s = literal_secret(rng)
    key = rng.choice(YAML_KEYS)
    style = rng.choice(["plain", "block", "folded"])
    head = {"plain": f"  {key}:", "block": f"  {key}: |", "folded": f"  {key}: >-"}[style]
    return ["auth:", head, f"    {s}", "  timeout: 30"], [s]


def compose_env(rng: random.Random) -> tuple[list[str], list[str]]:
    s, t = literal_secret(rng), literal_secret(rng)
    a, b = rng.sample(ENV_NAMES, 2)
    return ["services:", "  api:", "    environment:", f"      - {a}={s}", f"      {b}: {t}"], [s, t]


def json_config(rng: random.Random) -> tuple[list[str], list[str]]:
    s = any_secret(rng)
    key = rng.choice(YAML_KEYS)
    return ["{", '  "host": "db.internal",', f'  "{key}": {json.dumps(s)},', '  "pool": 5', "}"], [s]


def json_in_json(rng: random.Random) -> tuple[list[str], list[str]]:
    s = any_secret(rng)
    key = rng.choice(YAML_KEYS)
    inner = json.dumps({"user": "app", key: s})
    outer = json.dumps({"level": "info", "msg": inner, "ts": rng.randint(1_700_000_000, 1_800_000_000)})
    return [outer], [s]


def json_env_array(rng: random.Random) -> tuple[list[str], list[str]]:
    s = literal_secret(rng)
    name = rng.choice(ENV_NAMES)
    return ['"Env": [', '    "PATH=/usr/local/bin:/usr/bin",', f'    "{name}={s}",', '    "LANG=C.UTF-8"', "],"], [s]


def url_credentials(rng: random.Random) -> tuple[list[str], list[str]]:
    s = rng.choice([special_password, random_token, human_password])(rng)
    user = rng.choice(["app", "admin", "", "default", "svc_reader", "postgres"])
    scheme = rng.choice(SCHEMES)
    # as a client writes it: fully percent-encoded, or only the characters that would break the URL
    pw = urllib.parse.quote(s, safe="") if rng.random() < 0.3 else urllib.parse.quote(s, safe=".~*^!$&+=;,")
    url = f"{scheme}://{user}:{pw}@{rng.choice(HOSTS)}:{rng.randint(1000, 9999)}/app"
    form = rng.choice(["url: {u}", "DATABASE_URL={u}", "  connecting to {u}", '"dsn": "{u}",', "{u}"])
    return [form.format(u=url)], [pw]


def url_encoded_dsn(rng: random.Random) -> tuple[list[str], list[str]]:
    s = rng.choice([special_password, random_token, human_password])(rng)
    url = f"{rng.choice(SCHEMES)}://app:{urllib.parse.quote(s, safe='')}@{rng.choice(HOSTS)}/db"
    enc = urllib.parse.quote(url, safe="")
    return [f"GET /health?target={enc}&v=2 200", f"2026-01-02T03:04:05Z dsn={enc}"], [urllib.parse.quote(s, safe="")]


def bearer(rng: random.Random) -> tuple[list[str], list[str]]:
    s = rng.choice([dotted_token, random_token])(rng)
    form = rng.choice(["> Authorization: Bearer {s}", "Authorization: bearer {s}", '-H "Authorization: Bearer {s}"',
                       '"authorization": "Bearer {s}",', "headers: {{Authorization: 'Bearer {s}'}}"])
    return [form.format(s=s)], [s]


def nginx_basic(rng: random.Random) -> tuple[list[str], list[str]]:
    b = base64.b64encode(f"{rng.choice(['admin', 'ops', 'ci'])}:{human_password(rng)}".encode()).decode()
    return ["location /api/ {", "    proxy_pass http://backend;",
            f'    proxy_set_header Authorization "Basic {b}";', "}"], [b]


def netrc(rng: random.Random) -> tuple[list[str], list[str]]:
    s = literal_secret(rng)
    host = rng.choice(["api.heroku.com", "github.com", "registry.example.org", "ftp.internal"])
    if rng.random() < 0.5:
        return [f"machine {host}", "  login me@example.com", f"  password {s}"], [s]
    return [f"machine {host} login deploy password {s}"], [s]


def cli_flags(rng: random.Random) -> tuple[list[str], list[str]]:
    s = literal_secret(rng)
    form = rng.choice([
        "$ sshpass -p {s} ssh root@10.0.0.5 uptime", "$ sshpass -p '{s}' scp build.tgz ops@host:/srv",
        "$ mysql -h db -u root -p{s} orders", "$ mysqldump -uroot -p{s} --all-databases > dump.sql",
        "$ redis-cli -h cache -a {s} ping", "$ redis-cli -a '{s}' --no-auth-warning info",
        "$ app migrate --password {s}", "$ vault login --token={s}", "$ curl -u admin:{s} https://ci/api/json",
        "$ docker login -u me -p {s} ghcr.io", "$ psql --password={s} -h db app",
    ])
    return [form.format(s=s)], [s]


def continuation(rng: random.Random) -> tuple[list[str], list[str]]:
    s = literal_secret(rng)
    name = rng.choice(ENV_NAMES)
    if rng.random() < 0.5:  # the value on the line after its name
        return [f"export {name}=\\", f"    {s}", "./deploy.sh"], [s]
    return ["docker run --rm \\", f"  -e {name}={s} \\", "  -p 8080:8080 \\", "  ghcr.io/acme/api:1.4"], [s]


def base64_env(rng: random.Random) -> tuple[list[str], list[str]]:
    s = literal_secret(rng)
    env = f"DB_HOST=db.internal\nDB_USER=app\n{rng.choice(ENV_NAMES)}={s}\nLOG_LEVEL=info\n".encode()
    if rng.random() < 0.5:
        b = base64.b64encode(env).decode()
        return ["$ base64 -w0 .env", b], [b]
    wrapped = base64.encodebytes(env).decode().splitlines()
    return ["$ base64 .env", *wrapped], [x for x in wrapped if len(x) >= 20]


def k8s_secret(rng: random.Random) -> tuple[list[str], list[str]]:
    s = literal_secret(rng)
    key = rng.choice(["password", "DB_PASSWORD", "api-token", "client-secret", "REDIS_PASS", "root", "config.json"])
    b = base64.b64encode(s.encode()).decode()
    return ["apiVersion: v1", "kind: Secret", "metadata:", "  name: app-creds", "type: Opaque", "data:",
            f"  {key}: {b}", "  username: " + base64.b64encode(b"app").decode()], [b]


def aws_secret_string(rng: random.Random) -> tuple[list[str], list[str]]:
    s = any_secret(rng)
    if rng.random() < 0.5:
        value = json.dumps({"username": "admin", "password": s, "engine": "postgres"})
    else:
        value = s
    return ["{", '    "ARN": "arn:aws:secretsmanager:us-east-1:123456789012:secret:prod/db-AbCdEf",',
            '    "Name": "prod/db",', f'    "SecretString": {json.dumps(value)},',
            '    "VersionStages": ["AWSCURRENT"]', "}"], [s]


def pem_body(rng: random.Random) -> tuple[list[str], list[str]]:
    """Key lines from the middle of a private key file: no BEGIN line in sight."""
    body = base64.b64encode(rng.randbytes(1200)).decode()
    lines = [body[i:i + 64] for i in range(0, len(body), 64)]
    start = rng.randint(3, 8)
    part = lines[start:start + rng.randint(1, 12)]
    return part, part


def config_files(rng: random.Random) -> tuple[list[str], list[str]]:
    """Secrets in the config formats of other ecosystems."""
    s = literal_secret(rng)
    name = rng.choice(ENV_NAMES)
    key = rng.choice(YAML_KEYS)
    form = rng.choice([
        ["<settings><servers><server>", "  <id>nexus</id>", "  <username>deploy</username>",
         f"  <password>{s}</password>", "</server></servers></settings>"],
        [f"define( '{name}', '{s}' );"],
        ["# redis.conf", "bind 127.0.0.1", f"requirepass {s}"],
        [f"Server=db.internal;Database=app;User Id=app;Password={s};Encrypt=true"],
        [f"$ kubectl create secret generic app --from-literal={key}={s}"],
        ['resource "aws_db_instance" "main" {', f'  {key} = "{s}"', "}"],
        [f"jdbc:postgresql://db:5432/app?user=app&password={s}&ssl=true"],
        [f"CREATE USER 'app'@'%' IDENTIFIED BY '{s}';"], [f"ALTER ROLE app WITH LOGIN PASSWORD '{s}';"],
        ["====== Data ======", "Key                 Value", "---                 -----", f"{key:<20}{s}", "ttl                 768h"],
    ])
    return form, [s]


def name_value(rng: random.Random) -> tuple[list[str], list[str]]:
    """Secrets in name/value lists: Kubernetes env, ECS task definitions, CloudFormation parameters."""
    s = literal_secret(rng)
    name = rng.choice(ENV_NAMES)
    form = rng.choice([
        ["        env:", "        - name: LOG_LEVEL", "          value: info", f"        - name: {name}",
         f"          value: {s}"],
        ["        env:", f"        - name: {name}", f'          value: "{s}"'],
        [json.dumps({"environment": [{"name": "STAGE", "value": "prod"}, {"name": name, "value": s}]})],
        ['    "Parameters": [', f'        {{"ParameterKey": "{name}", "ParameterValue": "{s}"}}', "    ]"],
    ])
    return form, [s]


def flags_and_code(rng: random.Random) -> tuple[list[str], list[str]]:
    """Secrets behind longer flag names, in annotated declarations, in a printenv."""
    s = literal_secret(rng)
    word = rng.choice(["db", "admin", "bot", "root", "api"])
    form = rng.choice([
        f"$ ./deploy --{word}-password {s}", f"$ ./deploy --{word}-token={s}",
        f'val {word}Password: String = "{s}"', f'const {word}Token: string = "{s}";',
        f'    private static final String {word.upper()}_SECRET = "{s}";',
    ])
    if rng.random() < 0.3:
        return ["$ printenv | grep -i pass", f"{rng.choice(ENV_NAMES)}={s}"], [s]
    return [form], [s]


SHAPES: dict[str, Shape] = {
    "env-line": env_line, "heroku-config": heroku_config, "yaml-value": yaml_value,
    "yaml-next-line": yaml_next_line, "compose-env": compose_env, "json-config": json_config,
    "json-in-json": json_in_json, "json-env-array": json_env_array, "url-credentials": url_credentials,
    "url-encoded-dsn": url_encoded_dsn, "bearer": bearer, "nginx-basic": nginx_basic, "netrc": netrc,
    "cli-flags": cli_flags, "continuation": continuation, "base64-env": base64_env, "k8s-secret": k8s_secret,
    "aws-secret-string": aws_secret_string, "pem-body": pem_body, "config-files": config_files,
    "name-value": name_value, "flags-and-code": flags_and_code,
}


# ---- views: how a tool prints the lines ---------------------------------------------------------------

def view_lines(rng: random.Random, view: str, lines: list[str]) -> str:
    n = rng.randint(1, 400)
    path = rng.choice(["config/.env", "deploy/values.yaml", "src/settings.py", ".netrc", "k8s/secret.yaml",
                       "logs/app.log", "etc/nginx/conf.d/api.conf"])
    if view == "plain":
        out = lines
    elif view == "read":  # Claude Code's Read tool
        out = [f"{n + i:>6}→{line}" for i, line in enumerate(lines)]
    elif view == "cat-n":
        out = [f"{n + i:>6}\t{line}" for i, line in enumerate(lines)]
    elif view == "grep-n":
        out = [f"{path}:{n + i}:{line}" for i, line in enumerate(lines)]
    elif view == "diff":
        out = ["@@ -1,3 +1,4 @@", *(f"+{line}" for line in lines)]
    elif view == "indented":  # nested one level deeper in a YAML file / a heredoc
        out = [f"    {line}" for line in lines]
    elif view == "compose-logs":  # docker compose logs
        out = [f"api-1  | {line}" for line in lines]
    elif view == "json-log":  # a JSON log record holding the line (escaped) as its message
        out = [json.dumps({"level": "info", "msg": line, "time": "2026-01-02T03:04:05Z"}) for line in lines]
    else:
        raise ValueError(view)
    noise = ["$ " + rng.choice(["cat", "grep -n password -r .", "git diff", "kubectl get secret -o yaml"]),
             "total 12"]
    return "\n".join([*noise[: rng.randint(0, 2)], *out, ""])


VIEWS = ("plain", "read", "cat-n", "grep-n", "diff", "indented", "compose-logs", "json-log")


def secret_records(seed: int, per_pair: int = 8) -> list[Record]:
    rng = random.Random(seed)
    records = []
    for shape, make in SHAPES.items():
        for view in VIEWS:
            made = 0
            for _ in range(per_pair * 4):  # bounded: some shapes never fit a view
                if made == per_pair:
                    break
                lines, secrets = make(rng)
                if view == "json-log" and len(lines) > 1:
                    continue  # a log record holds one line; a file spread over records is not an output shape
                records.append(Record(shape, view, view_lines(rng, view, lines), tuple(secrets)))
                made += 1
    return records


# ---- must-keep strings --------------------------------------------------------------------------------

def must_keep(seed: int) -> list[tuple[str, str]]:
    """(kind, text) pairs no rule may touch: code about secrets, references and placeholders, hashes and ids,
    public material, and encodings of harmless text."""
    rng = random.Random(seed)
    ident = lambda: rng.choice(["auth", "token", "password", "secret", "api_key", "apiKey", "client_secret",  # noqa: E731
                                "credentials", "private_key", "access_token", "passwd"])
    typ = lambda: rng.choice(["AuthTypes | None", "Optional[str]", "str", "SecretStr", "bytes | None",  # noqa: E731
                              "typing.Optional[Credentials]", "TokenProvider", "HTTPBasicAuth"])
    out: list[tuple[str, str]] = []
    for _ in range(60):
        name = ident()
        out += [
            ("annotation", f"    {name}: {typ()} = None"),
            ("tuple", f"        {name} = (url.username, url.password)"),
            ("call", f"{name} = self._build_{name}(request, scheme=scheme)"),
            ("attribute", f"        {name} = settings.{name.upper()}"),
            ("env-ref", f"{name} = os.environ.get(\"{name.upper()}\", \"\")"),
            ("js", f"const {name} = process.env.{name.upper()} ?? config.get('{name}');"),
            ("ts-type", f"  {name}?: string | undefined;"),
            ("kwarg", f"    return Client({name}={name}, timeout=timeout)"),
            ("lambda", f"    key=lambda item: item.{name}_expires_at,"),
            ("template", f"{name.upper()}=${{{name.upper()}}}"),
            ("placeholder", f"{name}: <your-{name.replace('_', '-')}>"),
            ("compare", f"    if {name} is None or {name} == \"\":"),
            ("dict", f"    headers = {{\"Authorization\": f\"Bearer {{{name}}}\"}}"),
            ("masked", "        v = to_bytes_or_str(\"[secure]\", match_type_of=v)"),
            ("format", f"    {name}_header = \"Basic \" + b64encode(f\"{{user}}:{{pw}}\".encode()).decode()"),
            ("docstring", f"        :param {name}: (optional) Auth tuple or callable to enable Basic/Digest/Custom HTTP Auth."),
            ("sha", f"commit {random_token(rng, 40, HEX)}"),
            ("sha256", f"{random_token(rng, 64, HEX)}  dist/app-{rng.randint(1, 9)}.tar.gz"),
            ("uuid", f"request_id={random_token(rng, 8, HEX)}-{random_token(rng, 4, HEX)}-4{random_token(rng, 3, HEX)}-"
                     f"a{random_token(rng, 3, HEX)}-{random_token(rng, 12, HEX)}"),
            ("url", f"https://{rng.choice(HOSTS)}/v1/{ident()}s?page={rng.randint(1, 9)}"),
            ("harmless-b64", base64.b64encode(rng.choice(WORDS).encode() * rng.randint(3, 9)).decode()),
            ("cli-help", f"  --{name.replace('_', '-')} TEXT   The {name} to use (default: read from the keyring)"),
            ("log", f"INFO {name}.refresh:88 refreshed in {rng.randint(2, 900)} ms"),
            ("py-constant", f"{name.upper()}_SESSION_KEY = \"_{name}_user_id\""),
            ("py-constant", f"REASON_{name.upper()}_MISSING = \"{name.replace('_', ' ').capitalize()} missing.\""),
            ("py-regex", f"{name.upper()}_PAT = r\"(?:[0-9]{{1,3}}\\.){{3}}[0-9]{{1,3}}\""),
            ("py-hex", f"POLICY_CREATE_{name.upper()} = 0x{rng.randint(1, 4096):08x}"),
            ("py-bytes", f"OPENSSH_{name.upper()}_MAGIC = b\"openssh-key-v1\\x00\""),
            ("dict-entry", f"    MSG_USERAUTH_{name.upper()}: _parse_userauth_{name},"),
            ("js-negation", f"    request.with{name.title().replace('_', '')} = !!config.with{name.title().replace('_', '')};"),
            ("docstring", f"    {name}:\n        The {name.replace('_', ' ')} sent with the request."),
            ("env-name-value", f"ENV_VAR_{name.upper()} = 'AWS_CONTAINER_{name.upper()}'"),
            ("dotted-salt", f"key_salt = \"django.contrib.{name}.tokens.PasswordResetTokenGenerator\""),
            ("prose", f"# Run the default password hasher once to reduce the timing difference ({name})"),
            ("xml-ref", f"  <password>${{env.{name.upper()}}}</password>"),
            ("cookie-js", f"e.cookie=function(n,t){{return document.cookie=n+\"=\"+t}},{name}:null"),
        ]
    return out
