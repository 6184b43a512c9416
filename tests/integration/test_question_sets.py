"""The frozen developer question sets (eval/questions): unchanged since the freeze unless its README says so,
well formed, and valid against the pinned source of their libraries (fetched from the registries once, then
cached); the validator itself, on small real files written here."""

from __future__ import annotations

import hashlib
import re
import sys
import textwrap
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the eval package lives beside the tests

from eval import questions  # noqa: E402


def _frozen() -> dict[str, str]:
    text = (questions.HERE / "README.md").read_text(encoding="utf-8")
    return dict(re.findall(r"^\| `([\w.-]+)` \| `([0-9a-f]{64})` \|$", text, re.M))


def test_the_frozen_sets_are_unchanged() -> None:
    frozen = _frozen()
    assert frozen, "eval/questions/README.md lists no set with its sha256"
    assert sorted(frozen) == questions.set_names(), "every set file is listed in eval/questions/README.md"
    for name, digest in frozen.items():
        actual = hashlib.sha256((questions.HERE / f"{name}.json").read_bytes()).hexdigest()
        assert actual == digest, (f"{name}.json changed after the freeze: the sets are frozen; if a target was "
                                  f"wrong, say what changed in eval/questions/README.md with the new sha256 {actual}")


def test_three_libraries_in_three_languages_each_with_enough_questions() -> None:
    specs = [questions.load(n) for n in questions.set_names()]
    assert len({s["language"] for s in specs}) >= 3
    for spec in specs:
        assert questions.check_shape(spec) == []


@pytest.mark.parametrize("name", questions.set_names())
def test_every_set_is_valid_against_its_pinned_source(name: str) -> None:
    spec = questions.load(name)
    try:
        root = questions.source(spec)
    except Exception as exc:  # noqa: BLE001 - a registry that cannot be reached is said as such
        pytest.fail(f"could not fetch {spec['library']['package']} {spec['library']['package_version']} from "
                    f"{spec['library']['registry']} to validate the set: {type(exc).__name__}: {exc}")
    assert questions.validate(spec, root) == []
    ranges, _ = questions.resolve(spec, root)
    assert all(ranges)


def _spec(questions_: list[dict[str, object]]) -> dict[str, object]:
    lib = {"name": "x", "version": "1", "registry": "pypi", "package": "x", "package_version": "1", "root": "",
           "sha256": "0" * 64}
    filler = [{"q": f"filler question {i}", "targets": [["a.py", "Store.put"]]} for i in range(30)]
    return {"library": lib, "language": "python", "questions": questions_ + filler}


def _library(root: Path) -> None:
    (root / "a.py").write_text(textwrap.dedent('''\
        class Store:
            @property
            def size(self):
                return 0

            def put(self, key, value):
                """Write the value under the key, replacing any older value silently."""
                self.data[key] = value


        def retry_delay_seconds(attempt):
            return 2 ** attempt
        '''))
    (root / "b.go").write_text(textwrap.dedent("""\
        package b

        // Conn is a connection.
        type Conn struct{ n int }

        // advance moves to the next frame of the stream and checks its header bits.
        func (c *Conn) advance() int {
        \treturn c.n
        }

        func (c Conn[T]) Peek() int { return 0 }

        const (
        \tmaxSize = 125
        \tminSize = 2
        )
        """))
    (root / "c.js").write_text(textwrap.dedent("""\
        const CHECKPATH = Symbol('checkPath')
        const warner = c => c
        // returns [root, stripped]
        module.exports = path => [path, path]
        const Pack = warner(class Pack {
          [CHECKPATH] (entry) {
            return entry
          }
          get size () { return 1 }
        })
        const prefixPath = (p, prefix) => prefix + p
        Pack.parse = s => s
        """))


def test_the_definition_finder_names_symbols_as_the_sets_do(tmp_path: Path) -> None:
    _library(tmp_path)
    py = questions.definitions(tmp_path / "a.py")
    assert py["Store.size"].ranges == [(2, 4)]  # from the decorator
    assert py["Store.put"].ranges == [(6, 8)] and "replacing any older value" in py["Store.put"].doc[0]
    assert py["retry_delay_seconds"].ranges == [(11, 12)]
    go = questions.definitions(tmp_path / "b.go")
    assert go["Conn.advance"].ranges == [(7, 9)] and "next frame" in go["Conn.advance"].doc[0]
    assert go["Conn.Peek"].ranges == [(11, 11)] and go["Conn"].ranges == [(4, 4)]
    assert go["maxSize"].ranges == [(14, 14)] and go["minSize"].ranges == [(15, 15)]
    js = questions.definitions(tmp_path / "c.js")
    assert js["module.exports"].ranges == [(4, 4)] and "root, stripped" in js["module.exports"].doc[0]
    assert js["Pack.[CHECKPATH]"].ranges == [(6, 8)] and js["Pack.size"].ranges == [(9, 9)]
    assert js["prefixPath"].ranges == [(11, 11)] and js["Pack.parse"].ranges == [(12, 12)]
    assert "warner" in js and "CHECKPATH" not in js  # a function value is a definition, a Symbol is not


def test_the_validator_rejects_missing_targets_named_identifiers_and_copied_docstrings(tmp_path: Path) -> None:
    _library(tmp_path)
    good = [{"q": "where is the wait before the next attempt worked out", "targets": [["a.py", "retry_delay_seconds"]]},
            {"q": "which header bits of a frame are checked", "targets": [["b.go", "Conn.advance"]]},
            {"q": "where are leading slashes cut from a name", "targets": [["c.js", "module.exports"]]}]
    assert questions.validate(_spec(good), tmp_path) == []
    bad = [{"q": "where is the delay computed", "targets": [["a.py", "Store.retry_delay"]]},
           {"q": "where is the pause computed", "targets": [["missing.py", "f"]]},
           {"q": "what does RetryDelaySeconds return", "targets": [["a.py", "retry_delay_seconds"]]},
           {"q": "how is the retry delay seconds value found", "targets": [["a.py", "retry_delay_seconds"]]},
           {"q": "where do we put a value", "targets": [["a.py", "Store.put"]]},
           {"q": "which code does checkPath run", "targets": [["c.js", "Pack.[CHECKPATH]"]]},
           {"q": "I want to write the value under the key: where", "targets": [["a.py", "Store.put"]]},
           {"q": "what moves to the next frame of the stream", "targets": [["b.go", "Conn.advance"]]}]
    problems = questions.validate(_spec(bad), tmp_path)
    assert len(problems) == len(bad), problems
    assert sum("not a definition" in p for p in problems) == 2
    assert sum("names its target" in p for p in problems) == 4
    assert sum("copies the documentation" in p for p in problems) == 2


def test_a_set_too_small_or_with_a_repeated_question_is_refused() -> None:
    spec = _spec([])
    spec["questions"] = spec["questions"][:29]  # type: ignore[index]
    assert any("fewer than 30" in p for p in questions.check_shape(spec))
    spec = _spec([{"q": "filler question 0", "targets": [["a.py", "Store.put"]]}])
    assert any("twice" in p for p in questions.check_shape(spec))
    spec = _spec([{"q": "no targets", "targets": []}])
    assert any("malformed" in p for p in questions.check_shape(spec))


def test_the_runner_scores_answers_through_the_search_tool(tmp_path: Path) -> None:
    from eval.questions import run

    src = tmp_path / "src"
    src.mkdir()
    (src / "backoff.py").write_text(textwrap.dedent('''\
        def wait_before_next_try(attempt):
            # exponential pause between tries, capped at a minute
            return min(60, 2 ** attempt)


        class Store:
            def put(self, key, value):
                self.data[key] = value
        '''))
    (src / "NOTES.md").write_text("# Notes\n\nNothing about waiting here.\n")
    asked = [{"q": "exponential pause capped at a minute", "targets": [["backoff.py", "wait_before_next_try"]]},
             {"q": "where are records saved into the mapping", "targets": [["backoff.py", "Store.put"]]}]
    spec = _spec(asked)
    spec["questions"] = asked + [{"q": f"exponential pause {i}", "targets": [["backoff.py", "wait_before_next_try"]]}
                                 for i in range(28)]
    res = run.measure_spec("tiny", spec, src, ["keyword", "auto"], tmp_path / "work", None)
    assert res.nodes >= 3 and res.scores["keyword"].ranks[:2] == [1, None]
    assert res.misses["keyword"][0].startswith("'where are records saved")
    assert len(res.scores["auto"].ranks) == 30 and res.scores["keyword"].hit() == 29 / 30
    assert not (tmp_path / "src" / ".memtree").exists()  # the store lives in the copy's home, not the source

    spec["questions"][0]["q"] = "when does wait_before_next_try give up"
    with pytest.raises(RuntimeError, match="names its target"):
        run.measure_spec("tiny", spec, src, ["keyword"], tmp_path / "work2", None)
