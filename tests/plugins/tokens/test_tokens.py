"""The default token counter never under-counts this repository's code and prose.

The reference is a real BPE tokenizer available offline: the Claude tokenizer that the ``anthropic``
package (MIT licence) shipped as ``anthropic/tokenizer.json`` up to version 0.38, stored gzipped in
``tests/data/`` and loaded with the ``tokenizers`` package (a test dependency).
"""

from __future__ import annotations

import gzip
import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memtree_plugins.tokens import RUN, SAFETY, SINGLE_BLANK, UNIT, EstimatingCounter, _is_blob, estimate

REPO = Path(__file__).resolve().parents[3]
TOKENIZER = REPO / "tests" / "data" / "claude-legacy-tokenizer.json.gz"
SUFFIXES = {".py", ".md", ".txt", ".toml", ".json", ".yaml", ".yml", ".sh", ".js", ".ts", ".go", ".rs", ".sql"}


@pytest.fixture(scope="module")
def real():
    tokenizers = pytest.importorskip("tokenizers", reason="pip install -e '.[test]' brings tokenizers")
    tok = tokenizers.Tokenizer.from_str(gzip.decompress(TOKENIZER.read_bytes()).decode("utf-8"))
    return lambda text: len(tok.encode(text, add_special_tokens=False).ids)


def repo_texts() -> list[tuple[str, str]]:
    out = []
    for p in sorted(REPO.rglob("*")):
        rel = p.relative_to(REPO)
        if p.suffix not in SUFFIXES or not p.is_file() or any(
                part.startswith(".") or part in ("node_modules", "build", "dist") or part.endswith(".egg-info")
                for part in rel.parts):
            continue
        try:
            text = p.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        if text.strip() and len(text) < 2_000_000:
            out.append((str(rel), text))
    return out


def test_never_under_counts_whole_files_or_chunks_of_this_repo(real):
    texts = repo_texts()
    assert len(texts) > 20, "the repository's own files should be found"
    checked = 0
    worst = (9.0, "")
    for name, text in texts:
        lines = text.splitlines(keepends=True)
        # whole files, and 40-line windows (what a chunk or a tool output looks like)
        pieces = [(name, text)] + [(f"{name}:{i + 1}", "".join(lines[i:i + 40])) for i in range(0, len(lines), 40)]
        for label, piece in pieces:
            r = real(piece)
            if r < 20:
                continue
            e = estimate(piece)
            checked += 1
            worst = min(worst, (e / r, label))
            assert e >= r, f"{label}: estimate {e} < real {r} tokens"
    assert checked > 50
    print(f"checked {checked} texts; worst estimate/real ratio {worst[0]:.2f} ({worst[1]})")


@pytest.mark.parametrize("text", [
    "AKIAIOSFODNN7EXAMPLE wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "東京都の天気は晴れです。明日は雨が降るでしょう。",
    "🙂🚀✨ emoji and ümlauts: naïve café résumé",
    "x = [1, 2, 3]; y = {'a': (4, 5)}  # ((()))[[[]]]{{{}}}",
    "HTTPServerErrorHandler XMLHttpRequest getHTTPResponseCode",
    "2026-05-17T10:00:00.123Z ERROR 0x7ffdeadbeef pid=12345 took 987ms",
    "    \t\t    \n\n\n    ",
])
def test_symbol_heavy_and_non_ascii_text_is_not_under_counted(real, text):
    assert estimate(text) >= real(text)


def test_counter_basics():
    c = EstimatingCounter()
    assert c.count("") == 0
    assert c.count("a") >= 1
    assert c.count("word " * 100) > c.count("word " * 10)


def by_the_rules(text: str) -> int:
    """The estimate as the docstring states it: one regex match per unit (the fast path counts the same
    units with bytes.translate/count; this is the readable definition it must agree with)."""
    if not text:
        return 0
    units = UNIT.subn("", text)[1] - 0.5 * SINGLE_BLANK.subn("", text)[1]
    nbytes = len(text.encode("utf-8", "surrogatepass"))
    units += 0.75 * (nbytes - sum(1 for ch in text if ord(ch) < 128))
    for run in RUN.findall(text):
        if _is_blob(run):
            units += (3 * len(run) + 3) // 4 - UNIT.subn("", run)[1]
    return math.ceil(units * SAFETY)


# Characters at every class boundary the fast path handles: lower/upper/digit/underscore runs, blanks, each
# line break, punctuation, controls, "+/=" of base64 runs, multi-byte UTF-8 and a lone surrogate.
EDGY = "aAbBzZqQ09_ \t\r\n\f\v!#~=+/\x00\x7f\x1fé東🙂\ud800"
PIECES = ["HTTP", "Server", "ABc", "aB", "Ab", "parse", "__", "_" * 17, "  ", "\r\n", "12345", "Zm9vYmFyYmF6cXV4",
          "==", "/usr/lib/python3", "é", "\t"]


@settings(max_examples=400, deadline=None)
@given(st.one_of(st.text(alphabet=EDGY, max_size=80), st.text(max_size=80),
                 st.lists(st.sampled_from(PIECES), max_size=30).map("".join)))
def test_fast_count_equals_the_rules_on_any_text(text):
    assert estimate(text) == by_the_rules(text)


def test_fast_count_equals_the_rules_on_this_repo():
    texts = [t for _, t in repo_texts()]
    assert len(texts) > 20
    for text in texts:
        assert estimate(text) == by_the_rules(text)
