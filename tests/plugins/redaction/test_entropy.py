"""The bare random token rule: tokens no other rule knows, printed on their own; names and digests kept."""

from __future__ import annotations

import hashlib
import random
import string
import uuid

import pytest

from memtree_plugins.redaction.entropy import RULE

ALPHABETS = {"base62": string.ascii_letters + string.digits, "base64url": string.ascii_letters + string.digits + "-_"}


def tokens(alphabet: str, length: int, n: int, seed: int) -> list[str]:
    rnd = random.Random(seed)
    return ["".join(rnd.choice(alphabet) for _ in range(length)) for _ in range(n)]


@pytest.mark.parametrize("alphabet", sorted(ALPHABETS))
@pytest.mark.parametrize("length", [32, 48, 64])
def test_random_tokens_in_log_lines_are_redacted(alphabet: str, length: int) -> None:
    found = 0
    sample = tokens(ALPHABETS[alphabet], length, 200, seed=length)
    for token in sample:
        line = f"2026-12-04T10:00:00Z INFO worker-3 session {token} opened for user 42\n"
        new, hits = RULE.redact(line)
        found += token not in new
        if token not in new:
            assert new == line.replace(token, "[REDACTED:high-entropy-token]") and hits == 1
    assert found / len(sample) >= 0.9


@pytest.mark.parametrize("text", [
    "xmlSecOpenSSLTransformAes128CbcGetKlass", "NFCISO15693ReadMultipleBlocksConfiguration",
    "TLS1_CK_ADH_WITH_AES_128_GCM_SHA256", "SN_pbe_WithSHA1And3_Key_TripleDES_CBC",
    "ActivationNavigationsDisallowedForBug1234857", "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_",
    "VGhlc2UgYXJlbid0IHRoZSBkcm9pZHMgeW91J3JlIGxvb2tpbmcgZm9y", "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9",
    "NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2", "layers/v2-Build-20240101-x86_64-linux-gnu-release01",
])
def test_names_alphabets_and_encoded_text_are_kept(text: str) -> None:
    line = f"value = {text}\n"
    assert RULE.redact(line) == (line, 0)


def test_digests_uuids_and_paths_are_kept() -> None:
    rnd = random.Random(3)
    lines = [f"commit {hashlib.sha1(str(i).encode()).hexdigest()}" for i in range(50)]
    lines += [f"sha256 {hashlib.sha256(str(i).encode()).hexdigest().upper()}" for i in range(50)]
    lines += [f"request {uuid.UUID(int=rnd.getrandbits(128))} done" for _ in range(50)]
    token = tokens(ALPHABETS["base62"], 40, 1, seed=9)[0]
    lines += [f"GET /static/{token}/app.js", f"see {token}.json", f"blob +{token}/x==", f"{token}=="]
    text = "\n".join(lines)
    assert RULE.redact(text) == (text, 0)


def test_a_long_run_costs_one_attempt() -> None:
    text = "aB3" * 400_000  # one 1.2 MB run: longer than any token, judged once
    assert RULE.redact(text) == (text, 0)


def test_lines_of_a_base64_block_are_data() -> None:
    import base64

    rnd = random.Random(11)
    blob = base64.encodebytes(bytes(rnd.getrandbits(8) for _ in range(3000))).decode()
    assert RULE.redact(blob) == (blob, 0)  # 76-character lines, some with no + or / by chance
    token = tokens(ALPHABETS["base62"], 76, 1, seed=12)[0]
    line = f"session {token} opened\n"
    assert RULE.redact(line)[1] == 1  # the same shape inside a log line is a token
