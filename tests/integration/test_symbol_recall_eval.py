"""eval.symbol_recall's golden set and scoring, on a small library written here (the real run fetches
click and commander)."""

from __future__ import annotations

import importlib.util
import textwrap
from pathlib import Path

from helpers.common import REPO

# eval/ is not an installed package: load the script by its path, as `python -m eval.symbol_recall` runs it.
_spec = importlib.util.spec_from_file_location("symbol_recall", REPO / "eval" / "symbol_recall.py")
assert _spec is not None and _spec.loader is not None
symbol_recall = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(symbol_recall)
golden, js_defs, measure = symbol_recall.golden, symbol_recall.js_defs, symbol_recall.measure


def _library(root: Path) -> None:
    (root / "lib").mkdir(parents=True)
    (root / "lib" / "flags.js").write_text(textwrap.dedent("""\
        function parseFlag(flags) {
          return flags.split(' ');
        }

        class Option {
          attributeName() {
            if (this.x) {
              return parseFlag(this.flags);
            }
          }
        }
        """))
    (root / "lib" / "util.py").write_text(textwrap.dedent("""\
        def parse_flag(text):
            return text.split()


        class Option:
            def __init__(self):
                self.flags = parse_flag("")
        """))


def test_golden_keeps_names_defined_once_and_skips_dunders_and_keywords(tmp_path: Path) -> None:
    _library(tmp_path)
    files = sorted((tmp_path / "lib").iterdir())
    assert js_defs(files[0]) == [("parseFlag", 1), ("Option", 5), ("attributeName", 6)]
    names = [n for n, _f, _l in golden(files)]
    assert names == ["attributeName", "parseFlag", "parse_flag"]  # Option twice, __init__ a dunder


def test_measure_indexes_with_read_and_finds_each_definition(tmp_path: Path, home: Path) -> None:
    _library(tmp_path / "lib-root")
    hits, total, misses = measure("local", tmp_path / "lib-root", home)
    assert (hits, total, misses) == (3, 3, [])
