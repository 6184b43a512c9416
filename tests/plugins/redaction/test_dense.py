"""Hostile lines (a megabyte of ``token: ``, of ``AKIA``...): redacted whole by the dense-line rule, before
any rule judges them one keyword at a time; real long lines (minified code) are still judged as before.

No timing assertion: the speed is eval/bench/redaction.py's ("adversarial 1 MB lines").
"""

from __future__ import annotations

import random
import string

import pytest

from memtree_plugins.redaction import dense, scan
from memtree_plugins.redaction.engine import is_placeholder, start_of_line

rng = random.Random(20261204)
AN = string.ascii_letters + string.digits
MB = 1 << 20


@pytest.fixture(autouse=True)
def _same_draws_in_any_order() -> None:
    rng.seed(20261204)


def secret(n: int = 20) -> str:
    return "".join(rng.choice(AN) for _ in range(n))


# Each seed is followed by a distinct random value, so no judgement can be reused from one to the next.
SEEDS = ["token: ", "KEY: ", "KEY=", "PASSWORD=", "client-key-data: ", "private_key: ", '"password": "',
         "--password ", "Authorization: Bearer ", "https://u:", "aws_secret_access_key = ", "AKIA", "ghp_", "sk-"]


def hostile_line(seed: str, size: int) -> tuple[str, list[str]]:
    parts, values, n = [], [], 0
    while n < size:
        v = secret()
        values.append(v)
        part = f"{seed}{v} "
        parts.append(part)
        n += len(part)
    return "".join(parts), values


@pytest.mark.timeout(120)
@pytest.mark.parametrize("seed", SEEDS)
def test_a_hostile_line_is_redacted_whole_and_nothing_else_is_lost(app, seed):
    line, values = hostile_line(seed, MB)
    before = "DB_PASSWORD=" + secret() + "\nkeep this line\n"
    after = "\nand this one too\napi_key = '" + (last := secret(32)) + "'\n"
    out = app.redact_lines(before + line + after)
    assert out.text == before.replace(before[12:32], "[REDACTED:env-assignment]") + "[REDACTED:dense-line]" + \
        after.replace(last, "[REDACTED:secret-assignment]")
    assert out.hits["dense-line"] == 1
    assert out.lines[3] == ["dense-line"]  # line numbers kept: the line is still line 3
    assert not any(v in out.text for v in values[:50] + values[-50:])


@pytest.mark.parametrize("seed", ["token: ", "AKIA", "!", "gl", "pat", "key"])
def test_a_run_of_bare_keywords_is_redacted_whole(app, seed):
    text = (seed * (MB // len(seed) + 1))[:MB]
    out, hits = app.redact(text + "\r\nok\n")
    assert (out, hits) == ("[REDACTED:dense-line]\r\nok\n", {"dense-line": 1})


def minified(size: int, rate: float) -> str:
    """A long line shaped like a minified bundle: keywords a few per kilobyte, as real bundles have (~45 per
    4 KB at most in lines of up to 80 KB, ~5-15 in a search index's megabytes: rustdoc's)."""
    words = ["function", "return", "var", "this", "null", "if", "else", "for", "new", "typeof", "length",
             "push", "call", "apply", "prototype", "value", "options", "module", "exports", "require"]
    rare = ["key", "name", "default", "path", "!", "token", "auth", "pass"]  # needles
    out, n = [], 0
    while n < size:
        w = rng.choice(rare if rng.random() < rate else words) + rng.choice("(){}.,;=:") + \
            "".join(rng.choice(string.ascii_lowercase) for _ in range(rng.randint(1, 6)))
        out.append(w)
        n += len(w)
    return "".join(out)


@pytest.mark.parametrize(("size", "rate"), [(5000, 0.05), (80_000, 0.05), (MB, 0.01)])
def test_real_long_lines_are_still_judged_one_value_at_a_time(app, size, rate):
    line = minified(size, rate)
    needles = scan.current_needles()
    judged = dense.judged_needles(needles)
    assert judged.count(line, line.lower()) <= dense.allowance(len(line), dense.JUDGED) * 3 // 4  # as real code
    assert needles.count(line, line.lower()) <= dense.allowance(len(line), dense.ANY) * 3 // 4
    token = "ghp_" + secret(36)
    text = line + ";const t='" + token + "';" + line[:4000]
    out, hits = app.redact(text)
    assert "dense-line" not in hits and hits["github-pat"] == 1 and token not in out
    without = text
    for entry in app.plugins.redaction_rules.entries():
        if entry.name != "dense-line":
            without, _ = entry.item.redact(without)
    assert out == without  # judged exactly as without the dense-line rule


def test_the_allowance_grows_with_the_line():
    for limits in (dense.JUDGED, dense.ANY):
        per_4k, per_line, per_4k_long = limits
        assert dense.allowance(4096, limits) == per_4k
        assert dense.allowance(MB, limits) == max(per_line, per_4k_long * 256)
        assert dense.allowance(8 * MB, limits) == per_4k_long * 8 * 256  # a search index's megabytes stay judged


@pytest.mark.parametrize(("needle", "limits"), [("AKIA", dense.ANY), ("password=", dense.JUDGED)])
def test_just_over_the_allowance_is_dense_just_under_is_judged(needle, limits):
    needles = scan.current_needles()
    counter = needles if limits is dense.ANY else dense.judged_needles(needles)
    size = 300_000
    allowed = dense.allowance(size, limits)

    def line(n: int) -> tuple[str, int]:
        text = (("x" * (size // n - len(needle)) + needle) * n).ljust(size, "x")
        return text, counter.count(text, text.lower())

    n = 16
    while line(n)[1] <= allowed * 5 // 4:
        n *= 2
    over, under = line(n), line(n // 4)
    assert over[1] > allowed >= under[1]
    assert dense.too_dense(over[0], needles)
    assert not dense.too_dense(under[0], needles)


def test_start_of_line_agrees_with_rfind_far_from_the_line_start():
    text = "".join(rng.choice(["a" * rng.randint(0, 9000), "\n", "b\n" * 3, "c" * 5000]) for _ in range(60))
    for pos in [0, 1, len(text)] + [rng.randrange(len(text) + 1) for _ in range(400)]:
        assert start_of_line(text, pos) == text.rfind("\n", 0, pos) + 1, pos


def test_a_huge_value_is_never_taken_for_a_placeholder():
    assert is_placeholder("${TOKEN}")
    assert not is_placeholder("${TOKEN}" + "x" * 2000)  # judging it as one would cost more than redacting it


def test_long_line_check_never_misses_a_long_line():
    """The cheap check that lets text without a MIN_LINE line skip the rule says so only when no line is
    that long (lines just under, at and over the limit, anywhere in the text)."""
    pick = random.Random(rng.randrange(2**32))
    for _ in range(3000):
        lengths = [pick.choice([pick.randint(0, 120), pick.randint(2000, 4095), pick.randint(4096, 4200)])
                   for _ in range(pick.randint(1, 8))]
        text = "\n".join("x" * n for n in lengths)
        if max(lengths) >= dense.MIN_LINE:
            assert dense._may_have_long_line(text), lengths
    assert not dense._may_have_long_line(("y" * 80 + "\n") * 2000)


def test_one_pass_counts_equal_the_automata(monkeypatch):
    """Lines counted in one Hyperscan pass per block are judged dense exactly when the automata's three
    counts say so (keywords in any case, literals, judged names, text beyond ASCII, "İ" and the Kelvin sign)."""
    pytest.importorskip("hyperscan")
    needles = scan.current_needles()
    judged = dense.judged_needles(needles)
    assert dense._one_pass(needles, judged) is not None
    pick = random.Random(rng.randrange(2**32))
    words = [*needles.literals, *needles.keywords, *(k.upper() for k in needles.keywords), *judged.literals]
    lines = []
    for _ in range(60):
        filler = pick.choice([1, 4, 16, 64])
        parts = []
        while sum(map(len, parts)) < dense.MIN_LINE * pick.choice([1, 2, 5]):
            parts.append(pick.choice(words) + " " * pick.randint(0, filler) + pick.choice(["", "é", "x", "=", "İ"]))
        lines.append("".join(parts))
    lines += ["\u212a" + "EY: " * 5000, "token: " * 2000 + "é"]
    counter = dense._one_pass(needles, judged)
    for line in lines:
        data = dense._one_byte(line)
        if data is not None:  # the counts themselves, not only the verdict
            lit, kw = needles.counts(line, line.lower())
            assert counter.counts(data) == [lit, kw, judged.counts(line, "")[0]]
    judged_one_pass = [dense.too_dense(line, needles) for line in lines]
    assert any(judged_one_pass) and not all(judged_one_pass)
    monkeypatch.setattr(dense, "_one_pass", lambda needles, judged: None)
    assert [dense.too_dense(line, needles) for line in lines] == judged_one_pass
