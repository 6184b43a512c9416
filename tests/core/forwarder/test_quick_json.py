"""``memtree_core.forwarder.records``: what ``memtree serve`` parses before it answers ``initialize`` must be read
exactly as ``json.loads`` reads it (same objects, same refusals), without the json package's imports."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memtree_core.forwarder import records

REPO_IMPORT = "import sys; sys.path.insert(0, {repo!r})\n"

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(), children, max_size=4),
    max_leaves=20)


def same(a: Any, b: Any) -> bool:
    """Equal as json.loads results, NaN included (NaN != NaN)."""
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if type(a) is not type(b):
        return False
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    return bool(a == b)


def outcome(parse: Any, data: Any) -> tuple[str, Any]:
    try:
        return "value", parse(data)
    except RecursionError:
        return "error", None
    except ValueError:
        return "error", None


def check(data: bytes | str) -> None:
    mine, theirs = outcome(records.loads, data), outcome(json.loads, data)
    assert mine[0] == theirs[0], (data[:200], mine, theirs)
    assert same(mine[1], theirs[1]), (data[:200], mine, theirs)


@settings(max_examples=300, deadline=None)
@given(json_values, st.sampled_from([{}, {"indent": 2}, {"ensure_ascii": False}, {"separators": (",", ":")}]),
       st.sampled_from(["", " ", "\n", "\r\n", " \t"]))
def test_every_json_text_reads_as_json_loads_reads_it(value: Any, options: dict[str, Any], pad: str) -> None:
    text = pad + json.dumps(value, **options) + pad
    check(text)
    check(text.encode("utf-8", "surrogatepass"))


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=60) | st.text(max_size=60).map(lambda t: t.encode("utf-8", "surrogatepass")))
def test_arbitrary_bytes_are_refused_or_read_as_json_loads_does(data: bytes) -> None:
    check(data)


@pytest.mark.parametrize("data", [
    b"", b"   ", b"{", b"}", b'{"a": 1} x', b'{"a": 1}{"b": 2}', b"[1,]", b'{"a" 1}', b"01", b"1e", b"-",
    b"NaN", b"-Infinity", b"Infinity", b"nan", b"[1, 2] \n\t\r ", b'"\\ud800"', b'"\\u00e9\\n"',
    b'"a\tb"',  # a raw control character in a string: json's strict mode refuses it
    b"\xef\xbb\xbf[1]",  # a UTF-8 BOM in bytes: json detects the encoding and accepts it
    "\ufeff[1]",  # the same BOM in a str: json refuses it
    "[1]".encode("utf-16"), "[1]".encode("utf-32-le"), b"\xff\xfe", b'["\xff"]', b'["\xc3\xa9"]',
    b'{"id": 1, "id": 2}', b"12345678901234567890123456789", b"1.5e400", b"-0", b"-0.0", b"true", b"null",
    "[\u2028]", " \x0b1",  # a vertical tab is not JSON whitespace
])
def test_edge_cases_read_as_json_loads_reads_them(data: bytes | str) -> None:
    check(data)


def test_nesting_deeper_than_the_interpreter_recurses_is_a_value_error() -> None:
    with pytest.raises(ValueError):
        records.loads(b"[" * 100_000)
    with pytest.raises(ValueError):
        records.loads(b'{"a":' * 100_000)


@settings(max_examples=300, deadline=None)
@given(st.integers() | st.text())
def test_an_id_is_written_as_json_dumps_writes_it(value: int | str) -> None:
    assert records.dumps_id(value) == json.dumps(value).encode()


@pytest.mark.parametrize("value", [1.5, None, True, False, [1], {"a": 1}, float("nan")])
def test_an_id_that_is_neither_an_integer_nor_a_string_is_left_to_json(value: Any) -> None:
    assert records.dumps_id(value) is None


def test_reading_and_writing_an_id_imports_neither_json_nor_re() -> None:
    from pathlib import Path

    repo = str(Path(__file__).resolve().parents[3])
    script = (REPO_IMPORT.format(repo=repo)
              + "before = set(sys.modules)\n"
              + "from memtree_core.forwarder import records\n"
              + "assert records.loads(b'{\"id\": \"x\", \"a\": [1.5, null, true]}')['a'] == [1.5, None, True]\n"
              + "assert records.dumps_id('x') == b'\"x\"'\n"
              + "print(' '.join(sorted(set(sys.modules) - before)))\n")
    out = subprocess.run([sys.executable, "-I", "-S", "-c", script], capture_output=True, text=True, check=True)
    new = set(out.stdout.split())
    assert "memtree_core.forwarder.records" in new
    assert not new & {"json", "re", "enum", "json.decoder"}, new
