"""``memtree redact``: what memtree would store for a file or stdin, and ``--explain``'s spans and rules."""

from __future__ import annotations

import json
from pathlib import Path

from helpers.common import run_memtree

from memtree_plugins.redaction.command import spans

AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzz9aBcdEf1"
GITHUB = "ghp_" + "0123456789abcdefABCDEF0123456789abcd"
TEXT = f"AWS_SECRET_ACCESS_KEY={AWS_SECRET}\nplain line\ntoken: {GITHUB} and more\n"


def test_prints_what_would_be_stored(project: Path, tmp_path: Path) -> None:
    f = tmp_path / "leaky.env"
    f.write_text(TEXT)
    out = run_memtree("redact", str(f), "--project", str(project))
    assert out.returncode == 0, out.stderr
    assert AWS_SECRET not in out.stdout and GITHUB not in out.stdout
    assert out.stdout.splitlines()[1] == "plain line"
    assert out.stdout.count("\n") == TEXT.count("\n")  # line for line


def test_explain_lists_spans_and_rules_never_values(project: Path) -> None:
    out = run_memtree("redact", "-", "--explain", "--json", "--project", str(project), input=TEXT)
    assert out.returncode == 0, out.stderr
    assert AWS_SECRET not in out.stdout and GITHUB not in out.stdout
    report = json.loads(out.stdout)
    got = [(s["line"], s["start"], s["chars"]) for s in report["spans"]]
    assert got == [(1, len("AWS_SECRET_ACCESS_KEY=") + 1, len(AWS_SECRET)), (3, len("token: ") + 1, len(GITHUB))]
    assert all(s["rule"] for s in report["spans"])
    assert report["values"] == 2

    text = run_memtree("redact", "--explain", "--project", str(project), input=TEXT)
    assert text.stdout.splitlines()[-1].startswith("2 values redacted by rule: ")


def test_missing_file_is_one_clear_line(project: Path, tmp_path: Path) -> None:
    out = run_memtree("redact", str(tmp_path / "nope.txt"), "--project", str(project))
    assert out.returncode == 2
    assert out.stderr.startswith("memtree redact: ") and "nope.txt" in out.stderr
    assert "Traceback" not in out.stderr


def test_spans_of_a_folded_value_and_a_mark_already_there() -> None:
    original = "key: [REDACTED:x] ab SECRETVALUE cd\n-----BEGIN\nbody\n"
    redacted = "key: [REDACTED:x] ab [REDACTED:rule-a] cd\n\n\n"
    found = spans(original, redacted, {1: ["rule-a"], 2: ["+rule-a"], 3: ["+rule-a"]})
    assert [(s.line, s.start, s.end, s.rule, s.continued) for s in found] == [
        (1, 22, 33, "rule-a", False), (2, 1, 11, "rule-a", True), (3, 1, 5, "rule-a", True)]
