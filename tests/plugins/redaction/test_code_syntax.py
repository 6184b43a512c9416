"""Code in several languages is not a secret assignment, and secrets written in the same syntaxes still are.

The first table is lines of released libraries (Python, JavaScript, Go, Rust, C) whose value after a secret-named
key is an expression or a type of that language: a reference or pointer (``&ec::Seed``, ``*key``), a path
(``ed25519.Ed25519PublicKey``), a composite literal (``&oauth2.Token{``), a macro (``try!(``), a JS private
field, a parameter's type, a test vector.  They must come back byte-identical.  The second table writes real
secrets (seeded random values) in the same syntaxes: every one must be redacted.
"""

from __future__ import annotations

import random
import string

import pytest

from memtree_plugins.redaction.engine import is_counting, is_name, looks_like_code
from memtree_plugins.redaction.rules import _camel_words, is_words

rng = random.Random(20261204)  # seeded: the same values on every run
AN = string.ascii_letters + string.digits


def r(n: int, alphabet: str = AN) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


CODE_LINES = [
    # Python (cryptography, huggingface_hub)
    "MLKEM768X25519PrivateKey = rust_openssl.hpke.MLKEM768X25519PrivateKey",
    "    private_key: PKCS7PrivateKeyTypes,",
    "        self, public_key: ed25519.Ed25519PublicKey, f_pub: _FragList",
    '    AttributeOID.CHALLENGE_PASSWORD: "challengePassword",',
    '            "refresh_token": "hf_oauth__refresh_token",',
    # JavaScript (undici): a private field
    "    const oldestKey = this.#snapshots.keys().next().value",
    # Go (x/oauth2): a composite literal behind a reference
    "\ttoken := &oauth2.Token{\n\t\tAccessToken: tokenRes.AccessToken,\n\t}",
    # Rust (serde, ring)
    "        let key = try!(kseed.deserialize(key.into_deserializer()));",
    "            key: *key.words_less_safe().as_byte_array(),",
    "    private_key: &ec::Seed,",
    "    my_private_key: &ec::Seed,",
    "    private_key: &PrivateKey,",
    "    private_key_ops: &p256::PRIVATE_KEY_OPS,",
    "    check_private_key_bytes: x25519_check_private_key_bytes,",
    "fn derive_block(secret: &hmac::Key, iterations: NonZeroU32, salt: &[u8], idx: u32, out: &mut [u8]) {",
    "//! Key = 000102030405060708090A0B0C0D0E0F101112131415161718191A1B1C1D1E1F",
    '    assert_eq!(vec, b"Set-CookiE: a=b\\r\\nSET-COOKIE: c=d\\r\\n");',
    '        b"Set-CookiE: a=b\\r\\nContent-Encoding: gzip\\r\\nSET-COOKIE: c=d\\r\\n"',
    # Go type assertions; a name qualified as a kind (x/crypto, go-sql-driver)
    "\t\tecdsaPublicKey := pk.PublicKey.(*ecdsa.PublicKey)", "\tswitch key := tlscert.PrivateKey.(type) {",
    "\t\tpubKey = pkix.(*rsa.PublicKey)", '\tKeyAlgoSKECDSA256 = "sk-ecdsa-sha2-nistp256@openssh.com"',
    # Python (pyyaml, starlette): arithmetic on names and calls; a dotted module name in a string
    "        token_number = self.tokens_taken+len(self.tokens)",
    '_BODY_LIMIT_RESPONDER_SCOPE_KEY = "starlette._body_limit_responder"',
    # JavaScript bundles (@modelcontextprotocol/inspector, ext-apps): a negated parenthesised expression,
    # flags and CSS custom properties as strings
    "      this.directAuthRecoveryActive = !(baseTransport instanceof RemoteClientTransport);",
    "    showAuth: !!(selectedServer && selectedServerConfig && isOAuthCapableServerConfig(selectedServerConfig)),",
    'export type McpUiStyleVariableKey = "--color-background-primary" | "--color-background-secondary";',
    '  const authFlag = "--use-stored-auth";',
    # a multi-host URL: a port, then the next host's (documentation) credentials
    "mhu = MultiHostUrl('https://foo.com:123,foo:bar@bar.com/path')",
]


@pytest.mark.parametrize("text", CODE_LINES)
def test_code_in_several_languages_comes_back_as_it_is(app, text):
    assert app.redact(text) == (text, {})


def _secret_lines() -> list[tuple[str, str]]:
    rng.seed(20261204)
    s = [r(32) for _ in range(16)]
    pw = r(10) + "7$"
    hexkey = r(64, "0123456789abcdef")
    cookie = r(32)
    return [
        (f'\ttoken := "{s[0]}"', s[0]),  # Go
        (f'\ttok := &oauth2.Token{{AccessToken: "{s[1]}"}}', s[1]),  # Go, a composite literal holding a secret
        (f'const apiKey = "{s[2]}"', s[2]),  # Go / JS constant
        (f'    let api_key = "{s[3]}";', s[3]),  # Rust
        (f'        private_key: "{s[4]}",', s[4]),  # Rust / JS field holding a string
        (f'static const char *password = "{pw}";', pw),  # C
        (f'char *api_key = "{s[5]}";', s[5]),  # C
        (f"    this.#token = '{s[6]}';", s[6]),  # JS private field
        (f'    apiKey: "{s[7]}",', s[7]),  # TS / JS object
        (f'private_key: str = "{s[8]}"', s[8]),  # Python annotated
        (f"Key = {hexkey}", hexkey),  # a key in hex that does not count
        (f"password: {pw}", pw),  # YAML, unquoted
        (f"token: {s[9]},", s[9]),  # a flow list, unquoted
        (f"postgres://h1:5432,admin:{s[10]}@h2/db", s[10]),  # a multi-host URL with a real password
        (f'"Cookie: session={cookie}\\r\\n"', cookie),  # a header in a string literal
        (f"password = &{s[11]}", s[11]),  # a password that starts with a sigil
        (f"secret = *{s[12]}", s[12]),
        (f"token = {s[13][:10]}+{s[13][10:20]}/{s[13][20:]}==", s[13][:10]),  # base64 has operators too
        (f"password = !({s[0]}", s[0]),  # a password that starts like a negation is judged as a value
        (f'KEY_ALGO_SECRET = "{s[14]}"', s[14]),  # a qualifier, then a secret word again
        (f'    let cfg = Config {{ api_key: "{s[15]}".into() }};', s[15]),  # Rust struct literal
    ]


@pytest.mark.parametrize("i", range(len(_secret_lines())))
def test_secrets_in_the_same_syntaxes_are_still_redacted(app, i):
    text, secret = _secret_lines()[i]
    out, hits = app.redact(text)
    assert secret not in out and hits, out


def test_the_judgements_tell_names_from_tokens():
    for name in ("PKCS7PrivateKeyTypes", "Ed25519PublicKey", "x25519_check_private_key_bytes",
                 "MLKEM768X25519PrivateKey", "sha256_hmac_key"):
        assert is_name(name), name
    rng.seed(7)
    for token in ["Hunter2024", "abc", "5f4dcc3b5aa765d61d8327deb882cf99", "eyJhbGciOiJIUzI1NiJ9"] + \
            [r(n) for n in (12, 20, 32, 40) for _ in range(25)]:
        assert not is_name(token), token
    for code in ("&ec::Seed", "*key.bytes()", "&[u8]", "&oauth2.Token{", "AddedKey{PrivateKey:", "try!(x",
                 "vec![1", "this.#cache.get(k)", "rust_openssl.hpke.MLKEM768X25519PrivateKey", "x.(*rsa.PublicKey",
                 "self.taken+len(self.tokens", "n*key.size("):
        assert looks_like_code(code), code
    for literal in ("&" + r(16), "*" + r(16), "abc.DEF123xyz.QRS456tuv", "Summer2024.Winter2025", "Pa{" + r(8),
                    "Summer+Winter2024", r(8) + "+" + r(8) + "/" + r(8)):
        assert not looks_like_code(literal), literal
    assert is_counting("000102030405060708090A0B0C0D0E0F") and is_counting("0123456789abcdef0123456789abcdef")
    assert not any(is_counting(r(32, "0123456789abcdef")) for _ in range(50))
    assert is_words("challengePassword") and is_words("hf_oauth__refresh_token")
    # camelCase words pass; random letters almost never split into 2-4 vowelled words
    assert sum(_camel_words(r(16, string.ascii_letters)) for _ in range(1000)) <= 10
