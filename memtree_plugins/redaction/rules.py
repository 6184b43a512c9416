"""memtree's built-in redaction rules, in the order they run.  Read this file to audit what is redacted.

Every capture (Read, Grep, Bash output) and every wrapper output passes through these rules before anything
is written: rows, the FTS index, vectors, logs.  A secret is replaced in place by ``[REDACTED:<tag>]``;
the text around it (key names, URL scheme/user/host, quotes) is kept so the capture stays useful.

Bump :data:`RULESET_VERSION` whenever a rule is added, removed or changes what it matches.

How to extend: register more rules from a plugin (see ``memtree_plugins/redaction/__init__.py``)::

    from memtree_core.hookspecs import hookimpl
    from memtree_plugins.redaction.engine import PatternRule
    import re

    @hookimpl
    def memtree_register_redaction_rules(register):
        register(PatternRule("acme-token", re.compile(r"acme_[A-Za-z0-9]{32}"), literals=("acme_",)))
        register.remove("mailchimp-api-key")        # or drop a built-in by name

Order matters: token shapes with a vendor prefix run first, then structured places (key blocks, URLs,
headers, config files), then the two context rules.  Each rule leaves ``[REDACTED:...]`` alone, so running
the whole set twice gives the same text as running it once.

How values are judged (the context rules)
-----------------------------------------
Vendor-prefixed tokens (``ghp_``, ``AKIA``, ``sk-ant-``...) are redacted whatever they look like.
Values found by context (a key name, a flag, a header) are redacted unless they are:

* a placeholder — ``changeme``, ``${API_KEY}``, ``$TOKEN``, ``<your-key>``, ``{{ .Values.x }}``, ``xxxx``,
  ``***``, ``your_api_key_here``, ``REDACTED``, ``None``/``true``/numbers;
* code, when unquoted — an expression, not a literal: a call (``getpass()``, ``b64encode(x).decode()``), an
  index, a tuple (``(url.username, url.password)``), a negation (``!!config.withCredentials``), a dotted
  name whose parts read as names (``settings.API_KEY``; ``abc.DEF123xyz.QRS456tuv`` does not: a token), a
  type or annotation (``str``, ``AuthTypes | None = None``, ``token: CancelToken;``), a bare identifier
  (``refresh_token``), and the same in other languages: a reference or pointer (Rust/Go/C ``&ec::Seed``,
  ``*key``), a composite literal (Go ``&oauth2.Token{``), a macro (``try!(``), a JS private field
  (``this.#keys``), a type with numbers in its name as a parameter or field (``key: PKCS7PrivateKeyTypes,``);
* a counting run, as test vectors are (``000102030405…``, ``0123456789abcdef…``);
* a path or a credential-free URL.

Names: the long secret words count anywhere in a name, gitleaks-generic style (``PGPASSWORD``,
``CLIENTSECRET``, ``JWTSECRET``, ``NGROK_AUTHTOKEN``); the short ones (``PASS``, ``PWD``) as a segment or
glued at the end (``DBPASS``).  Names ending in a non-secret qualifier (``_FILE``, ``_PATH``, ``_URL``,
``_TTL``, ``_ENABLED``, ``_ID``...) are skipped.

Two tiers decide how much context is enough:

* **env-assignment** (and **env-colon-assignment**, ``DB_PASSWORD:      value`` as heroku prints it) —
  an UPPER_SNAKE name holding a secret word: any literal value is redacted, low entropy or not.  These are
  the lines of ``.env`` files, ``export`` lines and environment dumps, where ``DB_PASSWORD=hunter2`` is a
  real password.  They are found behind the gutters tools print (Read's ``12→``, ``grep -n``'s
  ``path:12:``, a diff's ``+``), inside JSON arrays and after ``-e``.
* **secret-assignment** — any other ``name = value`` / ``name: value`` / ``"name": "value"`` (quotes
  escaped too: JSON inside a JSON string) whose name holds a secret word (any case, camelCase too):
  redacted when the value looks random — at least 8 characters and at least 3.0 bits/char of Shannon
  entropy over its own characters — or, under a strong name (password, secret, token...), when it is shaped
  like a password (8+ characters, letters with digits or symbols: ``Tiger181$``).  Plain words
  (``'same-origin'``, ``"credentials"``) are settings, not secrets.  A bare ``key`` name (not api_key,
  secret_key...) needs 20+ random characters: the rule means generic 32+ char hex/base64 values after ``key=``.

Encoded secrets (encoded.py): base64 blobs whose decoded text holds a secret (``base64 .env``, Kubernetes
Secret data, docker auths) and PEM key body lines seen without their BEGIN line are redacted whole.

Hostile lines (dense.py, registered before every rule): a line too dense with keywords to judge one value at a
time (a megabyte of ``token: ``) is replaced whole by ``[REDACTED:dense-line]``, line break kept.

Not redacted on purpose (false-positive guards): git SHAs, ``sha256:``/``sha512-`` digests and integrity
hashes, UUIDs and ULIDs on their own, public keys and certificates, Stripe publishable keys (``pk_``).
"""

from __future__ import annotations

import base64
import binascii
import re
import urllib.parse
from functools import lru_cache

from memtree_plugins.redaction.encoded import EncodedSecrets
from memtree_plugins.redaction.engine import (
    MARK,
    PatternRule,
    is_name,
    is_number_or_flag,
    is_pathlike,
    is_placeholder,
    is_random_looking,
    is_wordy,
    looks_like_code,
    placeholder,
    quoted_span,
    start_of_line,
)

RULESET_VERSION = "2026.12.5"  # .5: the secret catalogue (catalogue/, its version in SOURCE.gitleaks), dense lines

# Token boundaries: a token must not be glued to more token characters on either side.
L = r"(?<![A-Za-z0-9_])"
R = r"(?![A-Za-z0-9_])"
LD = r"(?<![A-Za-z0-9_-])"  # for tokens whose alphabet has '-'
RD = r"(?![A-Za-z0-9_-])"
UUID = r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
# A key name then an assignment: `name = `, `name: `, `"name": `, `name := `, `name => `.
SEP = r"[\"']?[ \t]{0,3}(?::=|=>|=|:)(?![=:])[ \t]{0,3}"
ASSIGN = SEP + r"[\"']?"
# Stricter, for the name-only context rule: a bare `name:value` (no space) is a logger prefix or a
# host:port far more often than a YAML key, so `:` needs a quoted name or a space after it.
LOOSE_SEP = (r"(?:\\{0,7}[\"'][ \t]{0,3}(?::=|=>|=|:)|[ \t]{0,3}(?::=|=>|=)|[ \t]{0,3}:(?=[ \t]))"
             r"(?![=:>])[ \t]{0,3}")
# A quoted value, its quotes escaped or not (`"v"`, `\"v\"` in JSON inside a JSON string), or a bare token.
ESCAPED_VALUE = r"\\{1,7}\"(?:[^\"\\\n]|\\(?!\\{0,6}\")){1,512}+\\{1,7}\""
# What real tools print before a line's own text: Read's `    12→`, `cat -n`'s `    12<TAB>`, grep -n's
# `path:12:` (`path-12-` for context lines), a diff's `+`/`-`, docker compose logs' `api-1  | `.
GUTTER = r"(?:[ \t]*\d{1,9}(?:→|\t)|[^\s:]{1,256}[:-]\d{1,9}[:-]|[+-](?![+-])|[\w.-]{1,64}[ \t]+\|[ \t]?)?"
_GUTTER_RX = re.compile(GUTTER)
# Between netrc words: whitespace, and the gutter of each new line.
NL_GAP = r"(?:[ \t\r]|\n" + GUTTER + r")++"


def rx(pattern: str, flags: int = 0) -> re.Pattern[str]:
    return re.compile(pattern, flags)


_MASKED_RUN = re.compile(r"(.)\1{7}")


def not_masked(m: re.Match[str]) -> bool:
    """``sk_test_xxxxxxxxxxxxxxxx`` is documentation; a random token never has 8 equal characters in a row."""
    return not _MASKED_RUN.search(m.group(0))


HEXCHARS = "0123456789abcdef"
ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"


def token(name: str, pattern: str, *prefixes: str, description: str = "", back: str = "",
          anchored: bool = True) -> PatternRule:
    """A token recognised by its shape.  ``prefixes`` are case-sensitive literals: the prefilter, and the
    places a match starts (after stepping back over ``back`` characters when the literal is inside)."""
    return PatternRule(name, rx(pattern), literals=prefixes, check=not_masked, description=description,
                       anchored=anchored, back_over=back)


def _unquote(value: str) -> tuple[str, bool]:
    v = value.strip()
    q = quoted_span(v)
    if q is not None:
        return v[q[0]:q[1]], True
    return v, False


def literal_value(m: re.Match[str]) -> bool:
    """A literal that is not a placeholder, a reference or code."""
    value, quoted = _unquote(m.group("secret"))
    if is_placeholder(value) or is_number_or_flag(value):
        return False
    if not quoted and "_" in value and value.islower() and is_wordy(value):
        return False  # a snake_case name: `self._password = raw_password`
    return quoted or not looks_like_code(value)


_REGEX_SYNTAX = re.compile(r"\\[dswbDSWB.]|\(\?[:!=<P]|\[[^\]]{0,40}-[^\]]{0,40}\]|\{\d+(?:,\d*)?\}")


def looks_like_regex(value: str) -> bool:
    """``(?:[0-9]{1,3}\\.){3}``, ``[0-9A-Fa-f]{1,4}``: a pattern, not a secret."""
    return bool(_REGEX_SYNTAX.search(value))


def flag_value(m: re.Match[str]) -> bool:
    """A command-line flag's value; help texts show metavars (``--token TOKEN``, ``--password string``)."""
    value, quoted = _unquote(m.group("secret"))
    if re.fullmatch(r"[A-Z][A-Z_]*|string|str|text|value|secret|token|password", value):
        return False
    if not quoted and value.isalpha() and value.islower() and is_wordy(value):
        return False  # prose after a flag name: "--password suffers from the same"
    return literal_value(m)


AUTH_HEADERS = ("authorization", "proxy-authorization", "x-api-key", "x-auth-token", "x-access-token", "api-key",
                "private-token", "x-vault-token", "x-goog-api-key", "x-figma-token", "circle-token",
                "x-shopify-access-token", "ocp-apim-subscription-key", "x-redmine-api-key", "x-gitlab-token")
YAML_SECRET_KEYS = ("client-key-data", "token", "id-token", "refresh-token", "access-token", "auth-token",
                    "client-secret")
# Where the secret word ends an element or key name: far fewer places to try than every "key" in a text.
XML_SECRET_CLOSERS = ("pass>", "passwd>", "password>", "pwd>", "secret>", "token>", "key>", "credential>",
                      "credentials>", "passphrase>", "auth>")
YAML_SECRET_KEY_ENDS = ("pass:", "passwd:", "password:", "pwd:", "secret:", "token:", "key:", "credential:",
                        "credentials:", "passphrase:", "auth:", "secrets:", "tokens:")
KV_TABLE_KEY_ENDS = tuple(w + "  " for w in ("pass", "passwd", "password", "pwd", "secret", "token", "key",
                                             "credential", "credentials", "passphrase", "auth"))
_K8S_BOOTSTRAP = re.compile(r"[a-z0-9]{6}\.[a-z0-9]{16}")
_YAML_KEY_PREFIX = re.compile(r"[ \t]*(?:-[ \t]+)?\Z")


def yaml_token_value(m: re.Match[str]) -> bool:
    """Only a YAML key that starts its line (kubeconfig ``users:`` entries, ``- token: ...``)."""
    line_start = start_of_line(m.string, m.start())
    if not _YAML_KEY_PREFIX.match(m.string, line_start, m.start()):
        return False
    value, quoted = _unquote(m.group("secret"))
    if len(value) < 8 or is_pathlike(value):
        return False  # `token: JWT` (a TS type), `token: "https://.../oauth/token"` (an endpoint)
    if not quoted and (value.endswith((",", ";")) or _ANNOTATION_AFTER.match(m.string, m.end()) or
                       is_identifier(value)):
        return False  # `token: TokenProvider = None`, `token: token,` (a JS object), `token: CancelToken;` (TS)
    return bool(_K8S_BOOTSTRAP.fullmatch(value)) or literal_value(m)


_IDENTIFIER = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*")


def header_value(m: re.Match[str]) -> bool:
    """An unquoted identifier after a header name is a variable in code (``"X-Api-Key": api_key``) unless
    it looks random (a real key of letters and digits only)."""
    value, quoted = _unquote(m.group("secret"))
    if not quoted and _IDENTIFIER.fullmatch(value) and not is_random_looking(value, min_len=16):
        return False
    if value[:1] == "`" or is_pathlike(value):
        return False  # a JS template literal (`Bearer ${token}`), an endpoint URL
    return literal_value(m)


def random_value(m: re.Match[str]) -> bool:
    value, _ = _unquote(m.group("secret"))
    return literal_value(m) and not is_pathlike(value) and is_random_looking(value)


# ---- secret-looking names (shared by the two context rules) -----------------------------------------

_STRONG = re.compile(
    r"(?:^|_)(?:PASSWORD|PASSWD|PASSPHRASE|PASS|PWD|SECRETS?|TOKENS?|APIKEY|CREDENTIALS?|CREDS|AUTH|PAT)"
    r"(?:_|$)|(?:^|_)(?:API|ACCESS|PRIVATE|SECRET|MASTER|SIGNING|ENCRYPTION|SESSION|LICENSE|ADMIN|SERVICE|"
    r"ACCOUNT|APP|CLIENT|SHARED|WRITE|DEPLOY|SSH|GPG|SUBSCRIPTION|INGEST|WEBHOOK|AUTH|HMAC|JWT)_?KEY(?:_|$)")
# gitleaks-generic style: the long secret words count anywhere in a name (PGPASSWORD, CLIENTSECRET, JWTSECRET,
# NGROK_AUTHTOKEN, GITHUBTOKEN); the short ones (PASS, PWD, AUTH) only as a segment or glued at the end
# (DBPASS, MYSQLPWD), where they are not the start of another word (PASSENGER, AUTHOR).
_STRONG_GLUED = re.compile(
    r"PASSWORD|PASSWD|PASSPHRASE|SECRET(?!ARY)|TOKEN(?!I[SZ])|APIKEY|API_KEY|PRIVATE_?KEY|CREDENTIAL|"
    r"AUTH_?KEY|ACCESS_?KEY|SIGNING_?KEY|MASTER_?KEY|(?:PASS|PWD|PASSWD)$")
_WEAK = re.compile(r"(?:^|_)KEY(?:_|$)")
_NOT_SECRET = re.compile(
    r"_(?:FILE|FILES|PATH|DIR|URL|URI|HOST|PORT|ENDPOINT|SOCK|SOCKET|LENGTH|LEN|SIZE|TTL|EXPIRY|EXPIRES|"
    r"EXPIRATION|EXPIRES_IN|TIMEOUT|LIFETIME|AGE|ENABLED|DISABLED|REQUIRED|TYPE|KIND|NAME|ID|IDS|HEADER|"
    r"FIELD|PARAM|PREFIX|ALGORITHM|ALG|METHOD|MODE|VERSION|REGION|USER|USERNAME|LOGIN|EMAIL|SCOPE|SCOPES|"
    r"ENV|VAR|COMMAND|CMD|HELPER|PROVIDER|ISSUER|AUDIENCE|FORMAT|POLICY|ROTATION|COUNT|LIMIT|MIN|MAX|"
    r"HINT|LABEL|PROMPT|MESSAGE|STRENGTH|POLICY|RESET|CHANGED|CHANGED_AT|UPDATED_AT|STORE|MANAGER|TOOL|"
    r"INDEX|COLUMN|TABLE|SCHEME|STYLE|REGEX|PATTERN|VALIDATOR|FUNCTION|FN|CLASS|CALLBACK)$|"
    r"(?:PASS|SECRET|TOKEN|KEY)(?:FILE|PATH|DIR|URL|URI|LEN|LENGTH|SIZE|TYPE|NAME|COUNT|ID)$|"
    r"_(?:HASH|HASHED|DIGEST|SALT|CHECKSUM|FINGERPRINT)$|^(?:HASHED|FAKE|DUMMY|EXAMPLE|MOCK)_|"
    # a qualifier right after the secret word: KEY_ALGO_ED25519, TOKEN_TYPE_BEARER name a kind, not a value
    # (unless another secret word follows: KEY_ALGO_SECRET)
    r"(?:^|_)(?:KEY|TOKEN|SECRET|PASSWORD)_(?:ALGO|ALGORITHM|ALG|TYPE|KIND|FORMAT)"
    r"(?:$|_(?![A-Z0-9_]*(?:KEY|TOKEN|SECRET|PASS|PWD|AUTH|CRED)))")


@lru_cache(maxsize=4096)  # the same names (password, api_key, token) come back all through a capture
def secret_name(name: str) -> str | None:
    """'strong', 'weak' (a bare KEY) or None for a variable name, in any case convention."""
    norm = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name).upper().replace("-", "_").replace(".", "_")
    norm = norm.strip("_")
    if _NOT_SECRET.search(norm):
        return None
    if _STRONG.search(norm) or _STRONG_GLUED.search(norm):
        return "strong"
    if _WEAK.search(norm):
        return "weak"
    return None


def qualified_not_secret(name: str) -> bool:
    """True for a name whose last part says it holds no secret: ``token_id``, ``secret_name``, ``key_path``."""
    norm = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name).upper().replace("-", "_").replace(".", "_")
    return bool(_NOT_SECRET.search(norm.strip("_")))


_SPACED_EQUALS = re.compile(r"[ \t]=|=[ \t]")


def env_value(m: re.Match[str]) -> bool:
    kind = secret_name(m.group("name"))
    if kind is None:
        return False
    value, quoted = _unquote(m.group("secret"))
    value = value.strip()
    if len(value) < 4 or is_placeholder(value) or is_number_or_flag(value) or is_pathlike(value):
        return False
    if not quoted and (looks_like_code(value) or any(q in value for q in "\"'`")):
        return False  # an expression (`b"..."`, `"a" + b`, `x.format(...)`), not a literal
    if looks_like_regex(value):
        return False
    sep = m.string[m.end("name"):m.start("secret")]
    if "=" in sep and _SPACED_EQUALS.search(sep):
        # `NAME = value`: a shell cannot assign like that, so this is code or a config file (Python and JS
        # constants, Makefiles, TOML): judge the value as secret-assignment does.
        if not quoted and (_SPACE.search(value) or is_identifier(value)):
            return False
        if is_words(value) or not (is_random_looking(value) or is_password_shaped(value)):
            return False
    return kind == "strong" or is_random_looking(value)


_NAME_EXTRA = frozenset("_.-$")


def _name_start(text: str, end: int) -> int:
    """Where the identifier that ends at ``end`` begins (at most 60 characters back)."""
    i, lo = end, max(0, end - 60)
    while i > lo and (text[i - 1].isalnum() or text[i - 1] in _NAME_EXTRA):
        i -= 1
    return i


_SPACE = re.compile(r"\s")  # matches exactly the characters str.isspace() accepts


def assignment_value(m: re.Match[str]) -> bool:
    # Cheapest tests first: this runs for every `key = ...` in ordinary code.
    value, quoted = _unquote(m.group("secret"))
    if len(value) < 8 or _SPACE.search(value):
        return False
    bare = value.strip().strip("\"'`")
    if bare.startswith(MARK):  # already redacted by an earlier rule (literal_value would say so, later)
        return False
    # The match starts at the secret word; the variable name may begin earlier (client_secret, apiKey).
    text = m.string
    name = text[_name_start(text, m.start()):m.start()] + m.group("word") + m.group("rest")
    kind = secret_name(name.rsplit(".", 1)[-1])
    if kind is None:
        return False
    if not (is_random_looking(value, min_len=20 if kind == "weak" else 8)
            or (kind == "strong" and is_password_shaped(value))) or looks_like_regex(value):
        return False
    if not quoted and (is_identifier(value) or _ANNOTATION_AFTER.match(text, m.end())
                       or (is_name(value) and _LIST_GOES_ON.match(text, m.end()))):
        # `auth: AuthTypes | None = None`, `token = refresh_token`, `key: PKCS7PrivateKeyTypes,` (a parameter,
        # a field): names, not literals
        return False
    if is_words(value) and (len(value) < 24 or _WORD_JOINER.search(value)):
        return False  # `withCredentials = 'same-origin'`, `'AWS_CONTAINER_AUTHORIZATION_TOKEN'`: names, settings
    return not is_pathlike(value) and literal_value(m)


def continued_value(m: re.Match[str]) -> bool:
    """``NAME=\\`` ending a line, the value alone on the next: judged like a same-line assignment."""
    kind = secret_name(m.group("name").rsplit(".", 1)[-1])
    value = m.group("secret")
    if kind is None or value.startswith(MARK) or looks_like_regex(value) or is_pathlike(value):
        return False
    return is_random_looking(value, min_len=20 if kind == "weak" else 8) or (
        kind == "strong" and is_password_shaped(value))


_ANNOTATION_AFTER = re.compile(r"[ \t]*(?:\||=(?!=)|\[|\(|\.\w)")
_LIST_GOES_ON = re.compile(r"[ \t]*[,;)]")


_HAS_LETTER = re.compile(r"[A-Za-z]")
_HAS_NON_LETTER = re.compile(r"[^A-Za-z\s]")


_WORD_JOINER = re.compile(r"[-_ .:/]")
_HAS_DIGIT_OR_SYMBOL = re.compile(r"[0-9!@#$%^&*?~+=]")
_WORDS_ONLY = re.compile(r"(?:_{0,2}|--?)[A-Za-z]+(?:[-_ .:/]{1,2}[A-Za-z]+)*(?:[-_.]v?\d{1,2})?_{0,2}")


def is_password_shaped(value: str) -> bool:
    """What people pick when told to mix: 8+ characters, letters and digits or symbols (``Tiger181$``).  Under a
    strong name (password, secret, token) this is enough even when the entropy is low."""
    return len(value) >= 8 and bool(_HAS_LETTER.search(value)) and bool(_HAS_DIGIT_OR_SYMBOL.search(value)) and \
        not is_wordy(value)


def is_words(value: str) -> bool:
    """``credentials``, ``same-origin``, ``include``: plain words (letters, joined by - or _) that read as
    words.  A value under a secret name in code, not a secret."""
    if " " in value:
        value = value.rstrip(".!?")  # a sentence: "CSRF token missing."
    if len(value) >= 12 and value.isalpha() and sum(c in "aeiouAEIOU" for c in value) < 0.3 * len(value) \
            and not _camel_words(value):
        return False  # one long run of letters with few vowels: a random token, not a word
    return bool(_WORDS_ONLY.fullmatch(value)) and all(is_wordy(w) for w in re.split(r"[-_ .:/]", value)
                                                      if w and not w.isdigit() and not re.fullmatch(r"v\d+", w))


_CAMEL_WORD = re.compile(r"[A-Z]?[a-z]+")


def _camel_words(value: str) -> bool:
    """Two to four camelCase words, each with a vowel, 4+ letters long on average (``challengePassword``,
    ``refreshToken``): random letters change case every other character."""
    words = _CAMEL_WORD.findall(value)
    return 2 <= len(words) <= 4 and len(value) >= 4 * len(words) and "".join(words) == value and \
        all(any(c in "aeiouyAEIOUY" for c in w) for w in words)


def is_identifier(value: str) -> bool:
    """A bare name as code writes one (letters, ``_``, a few digits at the end): ``AuthTypes``,
    ``refresh_token``; a random token almost always has digits inside or is camel-cased at random."""
    return is_wordy(value)


def _line_prefix_is_gutter(text: str, start: int) -> bool:
    """Only a gutter, indentation and a YAML list dash stand between the line's start and ``start``."""
    line_start = start_of_line(text, start)
    g = _GUTTER_RX.match(text, line_start, start)
    return bool(_YAML_KEY_PREFIX.match(text, g.end() if g else line_start, start))


def _indent_after_gutter(text: str, line_start: int, end: int) -> int:
    g = _GUTTER_RX.match(text, line_start, end)
    i = j = g.end() if g else line_start
    while j < end and text[j] in " \t-":
        j += 1
    return j - i


_TYPE_LIKE = re.compile(r"[A-Z][A-Za-z]*(?:\[.*\])?")


def _type_like(value: str) -> bool:
    return bool(_TYPE_LIKE.fullmatch(value)) and is_wordy(value.split("[", 1)[0])


def env_colon_value(m: re.Match[str]) -> bool:
    """``DB_PASSWORD:      value`` (heroku config, compose environment:, CI env:) at the start of a line;
    ``API_KEY: Final[str] = ...`` is an annotation."""
    text = m.string
    if not _line_prefix_is_gutter(text, m.start()):
        return False
    value, quoted = _unquote(m.group("secret"))
    if not quoted and (_type_like(value) or _ANNOTATION_AFTER.match(text, m.end()) or value.endswith((",", ";"))
                       or ("_" in value and is_wordy(value))):
        return False
    if _COMMA_AFTER.match(text, m.end()):
        return False  # `NAME: "value",`: an entry of a dict in code (YAML has no trailing commas)
    return env_value(m)


_COMMA_AFTER = re.compile(r"[ \t]*,")


def yaml_next_line_value(m: re.Match[str]) -> bool:
    """``password:`` alone on its line, the value on the next, indented deeper (or a ``|`` block)."""
    text = m.string
    if not _line_prefix_is_gutter(text, m.start()):
        return False
    kind = secret_name(m.group("name"))
    if kind is None:
        return False
    key_start = start_of_line(text, m.start())
    value_start = m.start("secret")
    value_line = start_of_line(text, value_start)
    if _indent_after_gutter(text, value_line, value_start) <= _indent_after_gutter(text, key_start, m.start()):
        return False
    value, quoted = _unquote(m.group("secret").rstrip())
    if not quoted and (value.endswith(":") or ": " in value or value.startswith(("- ", "#")) or _SPACE.search(value)):
        return False  # a nested mapping, a list, or a sentence (a docstring's parameter description)
    if len(value) < 4 or is_placeholder(value) or is_number_or_flag(value) or is_pathlike(value):
        return False
    return kind == "strong" or is_random_looking(value)


def xml_value(m: re.Match[str]) -> bool:
    """An element named like a secret, holding a literal (``${env.PW}`` is a reference)."""
    name = m.group("name").rsplit(":", 1)[-1]
    kind = secret_name(name)
    value = m.group("secret")
    if kind is None or len(value) < 4 or is_placeholder(value) or is_number_or_flag(value) or is_pathlike(value):
        return False
    return kind == "strong" or is_random_looking(value)


def kv_table_value(m: re.Match[str]) -> bool:
    text = m.string
    if not _line_prefix_is_gutter(text, m.start()):
        return False
    kind = secret_name(m.group("name"))
    value, quoted = _unquote(m.group("secret"))
    if kind != "strong" or is_placeholder(value) or is_number_or_flag(value) or is_pathlike(value):
        return False
    if is_words(value) or (not quoted and (looks_like_code(value) or is_identifier(value))):
        return False
    return is_random_looking(value) or is_password_shaped(value)


_DATA_ENTRY = re.compile(r"(?P<head>[^\n]*?[\w.-]:[ \t]++)(?P<v>[A-Za-z0-9+/]{4,65536}={0,2})(?P<tail>[ \t]*+\r?(?:\n|$))")


def _decodes_to_text(value: str) -> bool:
    if len(value) % 4:
        return False
    try:
        raw = base64.b64decode(value, validate=True)
        text = raw.decode("utf-8")
    except (binascii.Error, ValueError):
        return False
    return bool(text) and text.translate(_NO_WHITESPACE).isprintable()


_NO_WHITESPACE = str.maketrans("", "", "\n\r\t")


def rewrite_secret_data(block: str) -> tuple[str, int]:
    """Each ``key: <base64>`` under ``data:`` whose value decodes to text (a ConfigMap's plain values do not
    decode; a Secret's always do)."""
    hits = 0

    def one(m: re.Match[str]) -> str:
        nonlocal hits
        if not _decodes_to_text(m.group("v")):
            return m.group(0)
        hits += 1
        return m.group("head") + placeholder("k8s-secret-data") + m.group("tail")

    head, nl, rest = block.partition("\n")
    return head + nl + _DATA_ENTRY.sub(one, rest), hits


def name_value_secret(m: re.Match[str]) -> bool:
    value, quoted = _unquote(m.group("secret"))
    kind = secret_name(m.group("name"))
    if kind is None or len(value) < 4 or is_placeholder(value) or is_number_or_flag(value) or is_pathlike(value):
        return False
    if not quoted and (looks_like_code(value) or is_identifier(value)):
        return False  # `name: KeyT, value: EncodableT` is a signature
    return kind == "strong" or is_random_looking(value, min_len=20)


def netrc_value(m: re.Match[str]) -> bool:
    """``default`` opens a netrc entry only at the start of a line ("the default password hasher" is prose)."""
    if m.group(0).startswith("default") and not _line_prefix_is_gutter(m.string, m.start()):
        return False
    return literal_value(m)


# user:password pairs every database and broker tutorial uses (Oracle's scott/tiger...): documentation, not
# secrets.  Only as a pair: a real password "tiger" for another user is still redacted.
DOC_CREDENTIALS = frozenset({("scott", "tiger"), ("user", "pass"), ("user", "password"), ("username", "password"),
                             ("user", "secret"), ("admin", "admin"), ("guest", "guest"), ("root", "root"),
                             ("postgres", "postgres"), ("foo", "bar"), ("me", "secret"), ("login", "password")})
_URL_USER = re.compile(r"://([^\s:/?#@\"'<>\[\]]{0,256}):")


def url_password(m: re.Match[str]) -> bool:
    """A URL's password, judged as it decodes (``a%20secret`` in docs is ``a secret``)."""
    value = urllib.parse.unquote(m.group("secret"))
    user = _URL_USER.search(m.group(0))
    user_name = urllib.parse.unquote(user.group(1)) if user else ""
    hosts = _HOST_LIST.match(value)
    if hosts:  # `host:123,user:pass@host`: a port, then the next host's credentials (a multi-host URL)
        user_name, _, value = hosts.group(1).rpartition(":")
    if (user_name.lower(), value.lower()) in DOC_CREDENTIALS:
        return False
    if hosts:
        return bool(value) and not is_placeholder(value) and not is_number_or_flag(value)
    return not is_placeholder(value) and literal_value(m)


_HOST_LIST = re.compile(r"\d{1,5},(?:[^,]*,)*([^,]*)")


def urlencoded_password(m: re.Match[str]) -> bool:
    value = urllib.parse.unquote(m.group("secret"))
    return bool(value) and not is_placeholder(value)


_PEM_BODY = re.compile(r"[A-Za-z0-9+/=]{32}")


def pem_has_body(m: re.Match[str]) -> bool:
    """``-----BEGIN PRIVATE KEY-----\\n...\\n-----END...`` in docs is not a key."""
    return bool(_PEM_BODY.search(m.group(0)))


def b64_private_key(m: re.Match[str]) -> bool:
    head = m.group(0)[:96]
    head = head[: len(head) - len(head) % 4]
    try:
        return b"PRIVATE KEY" in base64.b64decode(head)
    except (binascii.Error, ValueError):
        return False


_COOKIE_ATTRS = frozenset("path domain expires max-age samesite secure httponly priority partitioned version "
                          "comment".split())
# A value ends where an escaped line break or tab does: `"Set-Cookie: a=b\r\nHost: x"` in a string literal.
_COOKIE_PAIR = re.compile(r"(?P<n>[^\s=;,]{1,128}+)=(?P<v>(?:[^\s;,\\]|\\(?![rnt])){1,4096}+)")
_SESSIONISH = re.compile(r"(?i)sess|sid|token|auth|jwt|csrf|xsrf|login|remember|key|secret")


_CODE_CHARS = re.compile(r"[(){}\"'<>]")  # a cookie value never has these; minified JS does


def rewrite_cookies(line: str) -> tuple[str, int]:
    hits = 0

    def one(m: re.Match[str]) -> str:
        nonlocal hits
        name, value = m.group("n"), m.group("v")
        if name.lower() in _COOKIE_ATTRS or value.startswith("[REDACTED") or is_placeholder(value) or \
                _CODE_CHARS.search(value):
            return m.group(0)
        if len(value) >= 16 and (is_random_looking(value) or _SESSIONISH.search(name)):
            hits += 1
            return f"{name}=[REDACTED:cookie]"
        return m.group(0)

    head, sep, rest = line.partition(":")
    return head + sep + _COOKIE_PAIR.sub(one, rest), hits


# ---- the rules ------------------------------------------------------------------------------------------

def _rules() -> list[PatternRule | EncodedSecrets]:
    R_ = []
    add = R_.append

    # --- private key material (multi-line blocks first: their bodies must not be seen piecemeal) ---
    add(PatternRule(
        "private-key",
        rx(r"-----BEGIN[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?-----(?:[^-]|-(?!----)){0,131072}+"
           r"(?:-----END[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?-----)?"),
        literals=("PRIVATE KEY",), check=pem_has_body,
        description="PEM / OpenSSH / PGP / encrypted private key blocks, also inside JSON strings (\\n)"))
    add(PatternRule(
        "private-key-base64", rx(r"LS0tLS1CRUdJTi[A-Za-z0-9+/]{40,}+={0,2}"), literals=("LS0tLS1CRUdJTi",),
        check=b64_private_key, anchored=True, description="base64 of a PEM private key (kubeconfig client-key-data, k8s secrets)"))
    add(PatternRule(
        "putty-private-key",
        rx(r"Private-Lines:[ \t]*\d+\r?\n(?P<secret>(?:[A-Za-z0-9+/=]{1,128}+\r?\n?){1,256}+)"),
        literals=("Private-Lines:",), anchored=True, description="PuTTY .ppk private lines"))
    add(token("age-secret-key", r"AGE-SECRET-KEY-1[0-9A-Z]{58}", "AGE-SECRET-KEY-1"))

    # --- cloud providers ---
    add(token("aws-access-key-id", r"(?<![A-Z0-9])(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z0-9]{16}(?![A-Z0-9])",
              "AKIA", "ASIA", "ABIA", "ACCA", "A3T"))
    add(PatternRule(
        "aws-secret-access-key",
        rx(r"(?i)(?:aws_?secret_?(?:access_?)?key|secret_?access_?key)" + ASSIGN +
           r"(?P<secret>[A-Za-z0-9/+=]{40})(?![A-Za-z0-9/+=])"),
        keywords=("aws_secret", "awssecret", "secret_access", "secretaccess"), check=literal_value, anchored=True,
        description="aws_secret_access_key = ..., \"SecretAccessKey\": \"...\" (aws sts/iam JSON)"))
    add(PatternRule(
        "aws-session-token",
        rx(r"(?i)(?:aws_?session_?token|aws_?security_?token|session_?token)" + ASSIGN +
           r"(?P<secret>[A-Za-z0-9/+=]{16,}+)|" + LD + r"(?:IQoJb3JpZ2luX2Vj|FwoGZXIvYXdz)[A-Za-z0-9/+=]{80,}+"),
        keywords=("aws_session", "awssession", "aws_security", "awssecurity", "session_token", "sessiontoken",
                  "iqojb3jpz2lux2vj", "fwogzxivyxdz"), anchored=True))
    add(token("aws-mws-key", r"amzn\.mws\.[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}",
              "amzn.mws."))
    add(token("google-api-key", L + r"AIza[0-9A-Za-z_-]{35}" + RD, "AIza"))
    add(token("google-oauth",
              LD + r"(?:GOCSPX-[A-Za-z0-9_-]{28}|ya29\.[A-Za-z0-9_-]{20,}+|1//0[A-Za-z0-9_-]{40,}+)" + RD,
              "GOCSPX-", "ya29.", "1//0", description="OAuth client secrets, access and refresh tokens"))
    add(PatternRule("gcp-service-account-key-id",
                    rx(r"\"private_key_id\"\s{0,3}:\s{0,3}\"(?P<secret>[0-9a-f]{40})\""),
                    keywords=('"private_key_id"',), anchored=True, description="service-account JSON (the key itself: private-key)"))
    add(token("firebase-cloud-messaging", r"AAAA[A-Za-z0-9_-]{7}:APA91b[A-Za-z0-9_-]{130,}+", "APA91b", anchored=False))
    add(PatternRule(
        "azure-connection-string",
        rx(r"(?i)(?:AccountKey|SharedAccessKey|SharedSecretValue|PrimaryKey|SecondaryKey|AccessKey)"
           r"\s{0,2}=\s{0,2}(?P<secret>[A-Za-z0-9+/]{20,}+={0,2})"),
        keywords=("accountkey", "sharedaccesskey", "primarykey", "secondarykey", "accesskey", "sharedsecretvalue"),
        check=literal_value, anchored=True, description="storage / service bus / event hub connection strings"))
    add(token("azure-ad-client-secret", r"(?<![\w~.-])[A-Za-z0-9_~.]{3}\dQ~[A-Za-z0-9_~.-]{31,34}(?![\w~.-])",
              "Q~", back=ALNUM + "_~."))
    add(token("alibaba-access-key", L + r"LTAI[A-Za-z0-9]{20}" + R, "LTAI"))
    add(token("digitalocean-token", L + r"do[opr]_v1_[a-f0-9]{64}" + R, "dop_v1_", "doo_v1_", "dor_v1_"))
    add(PatternRule(
        "heroku-api-key",
        rx(LD + r"HRKU-[A-Za-z0-9_-]{60}" + RD + r"|(?i:heroku)[\w.-]{0,24}" + ASSIGN + r"(?P<secret>" + UUID + ")"),
        literals=("HRKU-",), keywords=("heroku",), anchored=True))
    add(token("cloudflare-origin-ca-key", r"v1\.0-[a-f0-9]{24}-[a-f0-9]{146}", "v1.0-"))
    add(token("databricks-token", L + r"dapi[a-f0-9]{32}(?:-\d)?" + R, "dapi"))
    add(token("vault-token", L + r"hv[sbr]\.[A-Za-z0-9_-]{24,}+", "hvs.", "hvb.", "hvr."))
    add(token("terraform-cloud-token", L + r"[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_=-]{60,70}" + RD, ".atlasv1.", back=ALNUM))
    add(token("pulumi-token", L + r"pul-[a-f0-9]{40}" + R, "pul-"))
    add(token("doppler-token", L + r"dp\.(?:pt|st|sa|ct|scim|audit)\.[A-Za-z0-9]{40,44}" + R, "dp."))
    add(token("flyio-token", LD + r"(?:fo1_[A-Za-z0-9_-]{43}|fm[12][ar]?_[A-Za-z0-9+/]{100,}+={0,3})",
              "fo1_", "fm1", "fm2"))
    add(token("netlify-token", L + r"nfp_[A-Za-z0-9]{36}" + R, "nfp_"))
    add(token("render-api-key", L + r"rnd_[A-Za-z0-9]{32}" + R, "rnd_"))
    add(token("planetscale-token", L + r"pscale_(?:tkn|pw|oauth)_[A-Za-z0-9_.-]{32,64}", "pscale_"))
    add(token("supabase-key", L + r"(?:sbp_[a-f0-9]{40}|sb_secret_[A-Za-z0-9_-]{30,}+)", "sbp_", "sb_secret_"))
    add(token("tailscale-key", L + r"tskey-(?:api|auth|client|webhook|scim)-[A-Za-z0-9]+-[A-Za-z0-9]{20,}+",
              "tskey-"))

    # --- source hosting, CI and package registries ---
    add(token("github-pat", L + r"ghp_[A-Za-z0-9]{36,}+", "ghp_"))
    add(token("github-oauth-token", L + r"gho_[A-Za-z0-9]{36,}+", "gho_"))
    add(token("github-app-token", L + r"gh[us]_[A-Za-z0-9]{36,}+", "ghu_", "ghs_"))
    add(token("github-refresh-token", L + r"ghr_[A-Za-z0-9]{36,}+", "ghr_"))
    add(token("github-fine-grained-pat", L + r"github_pat_[A-Za-z0-9_]{60,}+", "github_pat_"))
    add(token("gitlab-token",
              LD + r"(?:gl(?:pat|dt|rt|cbt|oas|soat|ffct|imt|agent|ft|ptt|wt)-[A-Za-z0-9_.-]{20,}+|"
              r"GR1348941[A-Za-z0-9_-]{20,}+)", "gl", "GR1348941"))
    add(token("atlassian-token", L + r"(?:ATATT3|ATCTT3)[A-Za-z0-9_=-]{100,}+|" + L + r"ATBB[A-Za-z0-9_=.-]{28,}+",
              "ATATT3", "ATCTT3", "ATBB", description="Atlassian/Jira/Confluence API tokens, Bitbucket app passwords"))
    add(token("npm-token", L + r"npm_[A-Za-z0-9]{36}" + R, "npm_"))
    add(token("pypi-token", L + r"pypi-Ag[EI][A-Za-z0-9_-]{50,}+", "pypi-Ag"))
    add(token("rubygems-token", L + r"rubygems_[a-f0-9]{48}" + R, "rubygems_"))
    add(token("nuget-api-key", L + r"oy2[a-z0-9]{43}" + R, "oy2"))
    add(token("clojars-token", L + r"CLOJARS_[a-z0-9]{60}" + R, "CLOJARS_"))
    add(token("dockerhub-token", L + r"dckr_(?:pat|oat)_[A-Za-z0-9_-]{27,}+", "dckr_"))
    add(token("jfrog-token", L + r"(?:AKCp[A-Za-z0-9]{69}|cmVmdGtuOjAx[A-Za-z0-9]{52})" + R, "AKCp", "cmVmdGtuOjAx"))
    add(token("sonarqube-token", L + r"sq[pua]_[a-f0-9]{40}" + R, "sqp_", "sqa_", "squ_"))
    add(token("sourcegraph-token", L + r"sgp_(?:[a-f0-9]{16}_)?[a-f0-9]{40}" + R, "sgp_"))
    add(token("buildkite-token", L + r"bkua_[a-f0-9]{40}" + R, "bkua_"))
    add(token("circleci-token", L + r"CCIPAT_[A-Za-z0-9]{22}_[a-f0-9]{40}" + R, "CCIPAT_"))
    add(token("octopus-deploy-key", L + r"API-[A-Z0-9]{26}" + R, "API-"))
    add(token("harness-token", L + r"pat\.[A-Za-z0-9_-]{22}\.[0-9a-f]{24}\.[A-Za-z0-9]{20}" + R, "pat."))

    # --- AI providers (Anthropic and OpenRouter before the generic sk- shape) ---
    add(token("anthropic-api-key", LD + r"sk-ant-[A-Za-z0-9_-]{32,}+", "sk-ant-"))
    add(token("openrouter-api-key", LD + r"sk-or-v1-[a-f0-9]{64}" + R, "sk-or-"))
    add(token("openai-api-key",
              LD + r"sk-(?:(?:proj|svcacct|admin|None)-[A-Za-z0-9_-]{40,}+|[A-Za-z0-9_-]{20,}T3BlbkFJ[A-Za-z0-9_-]{20,}+|"
              r"[A-Za-z0-9]{32,}+" + R + ")", "sk-",
              description="OpenAI keys (sk-, sk-proj-, sk-svcacct-) and other sk-<32+> provider keys"))
    add(token("huggingface-token", L + r"(?:hf_[A-Za-z0-9]{34,40}|api_org_[A-Za-z0-9]{34})" + R, "hf_", "api_org_"))
    add(token("groq-api-key", L + r"gsk_[A-Za-z0-9]{52}" + R, "gsk_"))
    add(token("xai-api-key", L + r"xai-[A-Za-z0-9]{80}" + R, "xai-"))
    add(token("perplexity-api-key", L + r"pplx-[A-Za-z0-9]{48}" + R, "pplx-"))
    add(token("replicate-api-token", L + r"r8_[A-Za-z0-9]{37}" + R, "r8_"))
    add(token("langsmith-api-key", L + r"lsv2_(?:pt|sk)_[a-f0-9]{32}_[a-f0-9]{10}" + R, "lsv2_"))

    # --- chat, messaging, webhooks ---
    add(token("slack-token",
              LD + r"(?:xox[abposr]-[0-9A-Za-z-]{10,}+|xoxe\.xox[bp]-\d-[A-Za-z0-9]{100,}+|xoxe-\d-[A-Za-z0-9]{100,}+|"
              r"xapp-\d-[A-Z0-9]+-\d+-[a-z0-9]+)", "xox", "xapp-"))
    add(PatternRule("slack-webhook",
                    rx(r"hooks\.slack\.com/(?:services|workflows|triggers)/(?P<secret>[A-Za-z0-9+/_-]{20,}+)"),
                    keywords=("hooks.slack.com",), anchored=True))
    add(PatternRule("discord-webhook",
                    rx(r"discord(?:app)?\.com/api/webhooks/\d+/(?P<secret>[A-Za-z0-9_-]{60,}+)"),
                    keywords=("discord",), anchored=True))
    # `[MNO](?<!tok[MNO])` is `(?<!tok)[MNO]` with the letter first, so the regex engine can skip to the
    # next M/N/O instead of trying every position (this rule scans the whole text).
    add(PatternRule("discord-bot-token",
                    rx(r"[MNO](?<![A-Za-z0-9_-][MNO])[A-Za-z0-9_-]{23,27}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,40}" + RD),
                    keywords=("discord",), description="only looked for where the word 'discord' occurs"))
    add(PatternRule("teams-webhook",
                    rx(r"\.webhook\.office\.com/webhookb2/(?P<secret>[^\s\"'<>]{20,}+)"),
                    keywords=(".webhook.office.com",), anchored=True))
    add(token("telegram-bot-token", r"(?<!\d)\d{8,10}:AA[0-9A-Za-z_-]{33}" + RD, ":AA", back="0123456789"))
    add(token("sendgrid-api-key", L + r"SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}" + RD, "SG."))
    add(token("twilio-api-key", L + r"SK[0-9a-fA-F]{32}" + R, "SK"))
    add(token("mailgun-api-key", LD + r"key-[0-9a-f]{32}" + RD, "key-"))
    add(token("mailchimp-api-key", L + r"[0-9a-f]{32}-us\d{1,2}" + R, "-us", back=HEXCHARS))
    add(token("postman-api-key", L + r"PMAK-[a-f0-9]{24}-[a-f0-9]{34}" + R, "PMAK-"))
    add(token("linear-api-key", L + r"lin_(?:api|oauth)_[A-Za-z0-9]{40,64}" + R, "lin_api_", "lin_oauth_"))
    add(token("figma-token", L + r"fig[dou]_[A-Za-z0-9_-]{38,}+", "figd_", "figo_", "figu_"))
    add(token("notion-token", L + r"(?:ntn_[0-9]{11}[A-Za-z0-9]{35}|secret_[A-Za-z0-9]{43})" + R, "ntn_", "secret_"))
    add(token("airtable-token", L + r"pat[A-Za-z0-9]{14}\.[a-f0-9]{64}" + R, "pat"))
    add(token("dropbox-token", L + r"sl\.(?:u\.)?[A-Za-z0-9_-]{130,}+", "sl."))
    add(token("contentful-token", L + r"CFPAT-[A-Za-z0-9_-]{43}" + RD, "CFPAT-"))
    add(token("typeform-token", L + r"tfp_[A-Za-z0-9_.=-]{59}" + RD, "tfp_"))
    add(token("frameio-token", L + r"fio-u-[A-Za-z0-9_=-]{64}" + RD, "fio-u-"))
    add(token("adobe-client-secret", L + r"p8e-[A-Za-z0-9]{32}" + R, "p8e-"))
    add(token("readme-api-key", L + r"rdme_[a-z0-9]{70}" + R, "rdme_"))
    add(token("prefect-api-key", L + r"pnu_[A-Za-z0-9]{36}" + R, "pnu_"))
    add(token("onepassword-service-token", L + r"ops_eyJ[A-Za-z0-9+/=_-]{100,}+", "ops_eyJ"))
    add(token("launchdarkly-key", L + r"(?:api|sdk)-" + UUID + RD, "api-", "sdk-"))

    # --- payments and commerce ---
    add(token("stripe-secret-key", L + r"(?:sk|rk)_(?:live|test|prod)_[0-9A-Za-z]{10,247}+",
              "sk_live_", "sk_test_", "sk_prod_", "rk_live_", "rk_test_", "rk_prod_"))
    add(token("stripe-webhook-secret", L + r"whsec_[A-Za-z0-9+/=]{32,}+", "whsec_"))
    add(token("square-token", LD + r"(?:sq0(?:atp|csp)-[A-Za-z0-9_-]{22,}+|EAAA[A-Za-z0-9_-]{60}" + RD + ")",
              "sq0atp-", "sq0csp-", "EAAA"))
    add(token("shopify-token", L + r"shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}" + R, "shpat_", "shpca_", "shppa_", "shpss_"))
    add(token("plaid-access-token", L + r"access-(?:sandbox|development|production)-" + UUID + R, "access-"))
    add(token("shippo-token", L + r"shippo_(?:live|test)_[a-f0-9]{40}" + R, "shippo_"))
    add(token("flutterwave-key", L + r"FLW(?:SECK|PUBK)_TEST-[a-h0-9]{32}-X" + R, "FLW"))
    add(token("easypost-key", L + r"EZ[AT]K[A-Za-z0-9]{54}" + R, "EZAK", "EZTK"))
    add(token("duffel-token", L + r"duffel_(?:test|live)_[A-Za-z0-9_=-]{43}" + RD, "duffel_"))
    add(token("facebook-access-token", L + r"EAA[B-Z][A-Za-z0-9]{80,}+", "EAA"))
    add(token("salesforce-access-token", L + r"00[A-Za-z0-9]{13}![A-Za-z0-9_.]{96}", "!", back=ALNUM))

    # --- observability and identity ---
    add(token("grafana-token",
              L + r"(?:glc_[A-Za-z0-9+/]{32,}+={0,2}|glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}|eyJrIjoi[A-Za-z0-9]{70,}+={0,2})",
              "glc_", "glsa_", "eyJrIjoi"))
    add(token("newrelic-key", L + r"(?:NR(?:AK|JS|II|AA|IQ)-[A-Za-z0-9_-]{19,40}+|[a-f0-9]{36}NRAL)" + RD,
              "NRAK-", "NRJS-", "NRII-", "NRAA-", "NRIQ-", "NRAL", back=HEXCHARS))
    add(token("sentry-token", L + r"(?:sntrys_eyJ[A-Za-z0-9=+/_-]{60,}+|sntryu_[a-f0-9]{64})", "sntrys_", "sntryu_"))
    add(token("mapbox-secret-token", L + r"sk\.eyJ[A-Za-z0-9._-]{80,}+", "sk.eyJ"))
    add(PatternRule("okta-token",
                    rx(r"(?i:okta)[\w.-]{0,30}" + ASSIGN + r"(?P<secret>00[A-Za-z0-9_=-]{40})" + RD),
                    keywords=("okta",), anchored=True))

    # --- generic shapes and structured places ---
    add(token("jwt", LD + r"eyJ[A-Za-z0-9_-]{8,}+\.eyJ[A-Za-z0-9_-]{8,}+\.[A-Za-z0-9_-]*+", "eyJ",
              description="JSON Web Tokens (also signed-less ones); covers k8s service-account tokens"))
    add(PatternRule(
        "url-credentials",
        rx(r"[+.-]{0,3}[A-Za-z][A-Za-z0-9+.-]{1,30}://[^\s:/?#@\"'<>\[\]]{0,256}+:(?P<secret>[^\s/?#\"'<>]{1,256})@"),
        keywords=("://",), check=url_password, anchored=True, back_over=ALNUM + "+.-",
        description="scheme://user:PASSWORD@host — the password only; scheme, user and host are kept"))
    add(PatternRule(
        "url-encoded-credentials",
        rx(r"(?i)[a-z](?:[a-z0-9+.-]|%2B){1,30}%3A%2F%2F(?:[^\s%/@:?#&\"'<>]|%(?!3A|40|2F)[0-9A-F]{2}){0,256}+%3A"
           r"(?P<secret>(?:[^\s%/@?#&\"'<>]|%(?!40)[0-9A-F]{2}){1,256}+)%40"),
        keywords=("%3a%2f%2f",), check=urlencoded_password, anchored=True, back_over=ALNUM + "+.-%",
        description="a URL-encoded scheme%3A%2F%2Fuser%3APASSWORD%40host (DSNs in query strings, logs)"))
    add(PatternRule(
        "url-query-secret",
        rx(r"(?i)(?<=[?&;])(?:access_token|id_token|refresh_token|auth_token|token|api_?key|apikey|client_secret|"
           r"secret|password|passwd|pwd|sig|signature|x-amz-signature|x-amz-security-token|key)="
           r"(?P<secret>[^&\s\"'<>#]{8,}+)"),
        keywords=("token=", "key=", "secret=", "password=", "passwd=", "pwd=", "sig=", "signature="),
        check=random_value, anchored=True, back_over=ALNUM + "_-", description="tokens in query strings (incl. Azure SAS sig= and S3 presigned URLs)"))
    add(PatternRule(
        "auth-header",
        rx(r"(?i)(?<![\w-])(?:" + "|".join(map(re.escape, AUTH_HEADERS)) + ")(?:" + ASSIGN + r"|[ \t]+\\{0,3}[\"'])" +
           r"(?:(?:bearer|basic|token|bot|ssws|apikey|api-key|key|sso-key|flyv1|negotiate|ntlm|otp)[ \t]+)?"
           r"(?P<secret>[^\s\"',;)}\]]{6,}+)"),
        keywords=AUTH_HEADERS, check=header_value, anchored=True,
        description="HTTP Authorization (Bearer/Basic/token/SSWS...) and API-key headers, curl -v included"))
    add(PatternRule("bearer-token", rx(r"(?i)\bbearer[ \t]+(?P<secret>[A-Za-z0-9._~+/-]{16,}+=*)"),
                    keywords=("bearer",), check=random_value, anchored=True))
    add(PatternRule("cookie", rx(r"(?i)(?:^|(?<=[\n\"'→\t ])|(?<=set-))cookie:[^\n]{1,8192}+"),
                    keywords=("cookie:",), rewrite=rewrite_cookies, anchored=True,
                    description="session-like values in Cookie / Set-Cookie headers"))
    add(PatternRule(
        "netrc-password",
        rx(r"(?:^|(?<=[\s:→+\"'-]))(?:machine" + NL_GAP + r"\S+|default)(?:" + NL_GAP + r"(?:login|account|port)" + NL_GAP +
           r"\S+)*+" + NL_GAP + r"password" + NL_GAP + r"(?P<secret>\S+)"),
        keywords=("machine", "default"), check=netrc_value, anchored=True))
    add(PatternRule(
        "docker-config-auth",
        rx(r"\"(?:auth|identitytoken|registrytoken)\"\s{0,3}:\s{0,3}\"(?P<secret>[^\"\s]{4,}+)\""),
        keywords=('"auth"', '"identitytoken"', '"registrytoken"'), check=literal_value, anchored=True,
        description="~/.docker/config.json auths entries"))
    add(PatternRule(
        "npmrc-auth",
        rx(r"(?i)(?<![\w])(?:_authToken|_auth|_password)[ \t]*=[ \t]*(?P<secret>\S+)"),
        keywords=("_auth", "_password"), check=literal_value, anchored=True, description=".npmrc / .yarnrc credentials"))
    add(PatternRule(
        "kubeconfig-secret",
        rx(r"(?<![\w-])(?:" + "|".join(YAML_SECRET_KEYS) + r")[ \t]*:[ \t]*(?P<secret>\"[^\"\n]+\"|'[^'\n]+'|[^\s#]+)"),
        keywords=YAML_SECRET_KEYS, check=yaml_token_value, anchored=True,
        description="kubeconfig users (client-key-data, token, auth-provider tokens) and YAML token: lines"))
    add(PatternRule(
        "cli-secret-flag",
        # --password, and any flag whose last word is one: --db-password, --bot-token, --admin-pass
        rx(r"(?i)(?<![\w-])--(?:[a-z0-9]{1,20}-){0,3}(?:password|passwd|pass|token|api-key|apikey|secret|"
           r"secret-key|access-key|private-key-password)(?:=|[ \t]+)"
           r"(?P<secret>\"[^\"\n]+\"|'[^'\n]+'|[^\s\"'-][^\s\"']*+)"),
        keywords=("-pass", "-token", "-api", "-secret", "-access-key", "-private-key-password"),
        check=flag_value, anchored=True, back_over="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-"))
    add(PatternRule(
        "name-value-secret",
        # {"name": "DB_PASSWORD", "value": "..."} (ECS, k8s env, CloudFormation parameters, docker inspect),
        # - name: DB_PASSWORD / value: ... (k8s manifests), <add key="Password" value="..." /> (.NET config)
        rx(r"(?i)(?:name|key|parameterkey)\\{0,7}[\"']?[ \t]{0,3}[:=][ \t]{0,3}\\{0,7}[\"']?(?P<name>[\w.-]{1,128}+)"
           r"\\{0,7}[\"']?[ \t]*+,?(?:[ \t]*+\r?\n" + GUTTER + r")?[ \t]*+\\{0,7}[\"']?(?:value|parametervalue)\\{0,7}[\"']?"
           r"[ \t]{0,3}[:=][ \t]{0,3}(?P<secret>" + ESCAPED_VALUE + r"|\"[^\"\n]*+\"|'[^'\n]*+'|[^\s,;}\"'/>\\]++)"),
        keywords=("name:", 'name":', "name=", r'name\":', "key=", 'key":', r'key\":', "parameterkey"), check=name_value_secret,
        anchored=True, description="a secret-named entry of a name/value list"))
    add(PatternRule(
        "cli-user-password",
        rx(r"(?<![\w-])(?:-u|--user|--basic-auth)[ \t]+[\"']?[^\s:\"']{1,128}+:(?P<secret>[^\s\"']+)"),
        keywords=("-u", "--user", "--basic-auth"), check=literal_value, anchored=True, description="curl -u user:PASSWORD"))
    add(PatternRule(
        "cli-short-password-flag",
        rx(r"(?<![\w-])(?:sshpass(?:[ \t]+-[a-oq-zA-Z](?:[ \t]+[^\s-]\S*)?)*+[ \t]+-p[ \t]*+|"
           r"(?:mysql|mysqldump|mysqladmin|mysqlimport|mysqlsh|mariadb|mariadb-dump)\b[^\n|;&]{0,200}?[ \t]-p(?=[^\s])|"
           r"(?:redis-cli|keydb-cli)\b[^\n|;&]{0,200}?[ \t](?:-a|--pass)[ \t]+|"
           r"(?:(?<=--)|(?<=[\n\t→ :+])|^)(?:requirepass|masterauth)[ \t]+)"
           r"(?P<secret>\"[^\"\n]+\"|'[^'\n]+'|[^\s\"'-]\S*)"),
        keywords=("sshpass", "mysql", "mariadb", "redis-cli", "keydb-cli", "requirepass", "masterauth"),
        check=flag_value, anchored=True,
        description="sshpass -p PW, mysql -pPW, redis-cli -a PW, --requirepass PW / redis.conf requirepass PW"))
    add(PatternRule(
        "xml-secret-element",
        rx(r"(?<=<)(?P<name>[\w:.-]{1,80}+)>(?P<secret>[^<>\s]{1,512}+)</(?P=name)>"),
        keywords=XML_SECRET_CLOSERS, check=xml_value, anchored=True,
        back_over=ALNUM + "_.-:", description="<password>PW</password> (maven settings.xml, .NET config, ...)"))
    add(PatternRule(
        "sql-password",
        rx(r"(?i)\b(?:identified[ \t]+by(?:[ \t]+password)?|(?<=[ \t])password)[ \t]+(?P<secret>'[^'\n]{1,256}+'|\"[^\"\n]{1,256}+\")"),
        keywords=("identified", "password"), check=literal_value, anchored=True,
        description="SQL: CREATE USER ... IDENTIFIED BY 'PW', CREATE ROLE ... PASSWORD 'PW'"))
    add(PatternRule(
        "kv-table-secret",
        # `vault kv get`, `consul kv`, `kubectl describe`-style tables: a secret-named key, padding, one value
        rx(r"(?<![\w.-])(?P<name>[A-Za-z_][\w.-]{0,80}+)[ \t]{2,40}+(?P<secret>[^\s]{4,512}+)[ \t]*+(?=\r?\n|\Z)"),
        keywords=KV_TABLE_KEY_ENDS, check=kv_table_value, anchored=True,
        back_over=ALNUM + "_.-", description="a table row: secret-named key, padding, the value alone"))
    add(PatternRule(
        "k8s-secret-data",
        rx(r"(?<![\w.-])(?:data|binaryData):[ \t]*+\r?\n(?:" + GUTTER + r"[ \t]++[\w.-]{1,253}+:[ \t]++[^\s]{4,65536}+"
           r"[ \t]*+(?:\r?\n|\Z)){1,500}+"),
        keywords=("data:",), rewrite=rewrite_secret_data, anchored=True, back_over="abcdefghijklmnopqrstuvwxyzD",
        description="a Kubernetes Secret's data: values (base64 of anything, even a low-entropy password)"))
    add(PatternRule(
        "php-define-secret",
        rx(r"define\([ \t]*+[\"'](?P<name>[A-Za-z_][A-Za-z0-9_]{0,127}+)[\"'][ \t]*+,[ \t]*+"
           r"(?P<secret>'[^'\n]*+'|\"[^\"\n]*+\")[ \t]*+\)"),
        keywords=("define(",), check=env_value, anchored=True,
        description="wp-config.php and friends: define('DB_PASSWORD', 'PW'), define('AUTH_KEY', '...')"))
    add(PatternRule(
        "aws-secret-string",
        rx(r"\"Secret(?:String|Binary)\"[ \t]{0,3}:[ \t]{0,3}\"(?P<secret>(?:[^\"\\\n]|\\.){1,65536}+)\""),
        literals=('"SecretString"', '"SecretBinary"'), check=lambda m: not is_placeholder(m.group("secret")),
        anchored=True,
        description="aws secretsmanager get-secret-value: the whole SecretString / SecretBinary"))
    add(PatternRule(
        "login-password-flag",
        rx(r"(?i)\blogin\b[^\n]{0,200}?[ \t]-p[ \t]+(?P<secret>[^\s\"'-]\S*)"),
        keywords=("login",), check=flag_value, anchored=True, description="docker/podman/helm login -p PASSWORD"))

    # --- decoded: base64 blobs holding secrets, key body lines without BEGIN (see encoded.py) ---
    add(EncodedSecrets(lambda: RULES))

    # --- the two context rules (last: they see what the others left) ---
    add(PatternRule(
        "env-assignment",
        # bol: the name starts its line (optionally after export/set/declare -x/ENV/ARG); then an unquoted
        # value runs to the end of the line (env dumps print values with spaces unquoted).
        rx(r"(?m)(?<![^\s\"'(;&|+:,\[{>→-])(?:(?P<bol>(?<=^)|(?<=^export )|(?<=^set )|(?<=^declare -x )|(?<=^typeset -x )|"
           r"(?<=^ENV )|(?<=^ARG ))|)(?P<name>[A-Z][A-Z0-9_]{0,127}+)[ \t]*=(?!=)[ \t]*"
           r"(?P<secret>\"[^\"\n]*+\"|'[^'\n]*+'|(?(bol)[^\n]*+|[^\s\"';&|)]++))"),
        literals=("PASS", "PWD", "SECRET", "TOKEN", "KEY", "AUTH", "CRED", "PAT"), check=env_value,
        anchored=True, back_over="ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_",
        description=".env / export / env-dump lines whose UPPER_SNAKE name holds a secret word"))
    add(PatternRule(
        "env-colon-assignment",
        rx(r"(?<![\w$.\"'-])(?P<name>[A-Z][A-Z0-9_]{0,127}+):[ \t]{1,64}+"
           r"(?P<secret>\"[^\"\n]*+\"|'[^'\n]*+'|[^\s\"'#][^\s]{0,511}+)"),
        literals=("PASS", "PWD", "SECRET", "TOKEN", "KEY", "AUTH", "CRED", "PAT"), check=env_colon_value,
        anchored=True, back_over="ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_",
        description="heroku config / compose environment: / CI env: lines, `DB_PASSWORD:      value`"))
    add(PatternRule(
        "yaml-next-line-secret",
        # The name is any key (the check asks secret_name); the match fails fast where no `:` ends the line.
        rx(r"(?<![\w.-])(?P<name>[\w.-]{1,80}+):[ \t]*+(?:[|>][-+]?[ \t]*+)?\r?\n" + GUTTER +
           # a value, not the next key (`token:`, `adminPassword: |`): those must stay free to match
           r"[ \t]++(?![^\n]{0,511}?:(?:[ \t]|\r?(?:\n|\Z)))(?P<secret>[^\s#][^\n]{0,511}+)"),
        keywords=YAML_SECRET_KEY_ENDS, check=yaml_next_line_value,
        anchored=True, back_over=ALNUM + "_.-",
        description="a YAML key alone on its line, the secret value on the next line"))
    add(PatternRule(
        "continued-secret",
        # `export API_TOKEN=\` then the value alone on the next line: a shell or Dockerfile continuation.
        rx(r"(?P<name>[\w.-]{1,80}+)[ \t]*+[=:][ \t]*+[\"']?\\\r?\n" + GUTTER +
           r"[ \t]*+[\"']?(?P<secret>[^\s\"'\\]{8,512}+)"),
        literals=("\\\n", "\\\r\n"), check=continued_value, lines_after=1,
        description="a secret-named assignment continued with `\\`, its value on the next line"))
    add(PatternRule(
        "secret-assignment",
        rx(r"(?i)(?P<word>pass(?:word|wd|phrase)?|pwd|secret|token|api[_-]?key|apikey|access[_-]?key|"
           r"private[_-]?key|credentials?|auth|key)(?P<rest>[\w.-]{0,30}+)" + LOOSE_SEP +
           r"(?:[A-Za-z_][\w.]{0,40}+(?:\[[\w., ]{0,60}+\]|<[\w., ]{0,60}+>)?\??[ \t]{0,3}=[ \t]{0,3}(?=[\"'\\]))?"
           r"(?P<secret>" + ESCAPED_VALUE + r"|\"[^\"\n]{1,512}+\"|'[^'\n]{1,512}+'|[^\s\"'`,;)}\]<>\\]{1,512}+)"),
        keywords=("pass", "pwd", "secret", "token", "key", "auth", "cred"), check=assignment_value, anchored=True,
        description="any other secret-named assignment whose value looks random (entropy >= 3.0 bits/char)"))
    return R_


RULES: list[PatternRule | EncodedSecrets] = _rules()
