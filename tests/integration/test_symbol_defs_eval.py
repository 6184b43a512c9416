"""eval/symbol_defs.py: the per-language definition rules the symbols bench derives its queries from, on
small snippets (a rule that took a call or a prototype for a definition would ask for code that is not
there; one that missed a construct would hide a chunker's miss)."""

from __future__ import annotations

import importlib.util

from helpers.common import REPO

_spec = importlib.util.spec_from_file_location("symbol_defs", REPO / "eval" / "symbol_defs.py")
assert _spec is not None and _spec.loader is not None
symbol_defs = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(symbol_defs)
FINDERS = symbol_defs.FINDERS


def names(lang: str, text: str) -> list[tuple[str, int]]:
    return FINDERS[lang](text)


def test_c_functions_with_bodies_not_prototypes_calls_comments_or_initialisers() -> None:
    text = ("/* parse (the whole input) */\nint parse(const char* s);\n\nstatic int\nparse_one(const char* s)\n{\n"
            "  return helper(s);\n}\n\ntypedef struct {\n  int n;\n} Frame;\n\nstruct ops {\n  int (*f)(void);\n"
            "} default_ops;\n\nFoo::Foo(int w)\n    : width_(w),\n      height_(0) {}\n")
    assert names("cpp", text) == [("parse_one", 5), ("Frame", 12), ("ops", 14), ("Foo", 18)]


def test_go_rust_ruby_java_typescript_rules() -> None:
    assert names("go", "package a\n\nfunc (s *Srv) Run() {}\ntype Srv struct{}\nvar ErrX = errors.New(\"x\")\n"
                       "\tx := f()\n") == [("Run", 3), ("Srv", 4), ("ErrX", 5)]
    assert names("rust", "pub(crate) fn a() {}\nmod tests;\nmod inner {\n}\nimpl X for Y {}\n"
                         "pub const MAX: usize = 1;\n") == [("a", 1), ("inner", 3), ("MAX", 6)]
    assert names("ruby", "module Thor\n  class Option < Argument\n    def required?\n    end\n"
                         "    def self.parse(x)\n    end\n  end\nend\n") == [
        ("Thor", 1), ("Option", 2), ("required?", 3), ("parse", 5)]
    assert names("java", "public class A {\n  @Override\n  public String toString() {\n    if (x) {\n"
                         "      return foo(1);\n    }\n  }\n}\n") == [("A", 1), ("toString", 3)]
    assert names("typescript", "export const EMPTY = 1;\nconst local = 2;\nexport interface I {}\n"
                               "function helper() {}\n") == [("EMPTY", 1), ("I", 3), ("helper", 4)]
