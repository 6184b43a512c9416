"""Where a library defines its names, per language, found without memtree's chunkers.

The symbol evals score memtree's chunkers against these, so they must not share a parser with them:
Python uses ``ast``; every other language a line rule a developer would grep with (a declaration keyword
at the start of a line, a C function header followed by its body).  Each rule finds the name and the
1-based line of its definition.  The rules keep to definitions a developer would look up by name:
functions and methods, types (classes, structs, enums, interfaces, traits, type aliases), modules and
namespaces, and a module's constants where the language marks them (JavaScript/TypeScript ``export const``,
Go ``var``/``const``, Rust ``const``/``static`` items).  Declarations without a body
(a C prototype, ``struct foo;``, Rust ``mod foo;``) are not definitions.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from pathlib import Path

Finder = Callable[[str], list[tuple[str, int]]]


def python_defs(text: str) -> list[tuple[str, int]]:
    return [(n.name, n.lineno) for n in ast.walk(ast.parse(text))
            if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)]


def _by_line(rules: list[re.Pattern[str]], skip: frozenset[str] = frozenset()) -> Finder:
    def find(text: str) -> list[tuple[str, int]]:
        out = []
        for i, line in enumerate(text.splitlines(), 1):
            for rx in rules:
                m = rx.match(line)
                if m and m.group("name") not in skip:
                    out.append((m.group("name"), i))
                    break
        return out
    return find


_JS_NAME = r"(?P<name>[A-Za-z_$][\w$]*)"
_JS_KEYWORDS = frozenset({"if", "for", "while", "switch", "catch", "function", "return", "constructor", "super"})
javascript_defs = _by_line([
    re.compile(rf"^\s*(?:export\s+)?(?:default\s+)?(?:async\s+)?function\s*\*?\s*{_JS_NAME}\s*[(<]"),
    re.compile(rf"^\s*(?:export\s+)?(?:default\s+)?class\s+{_JS_NAME}"),
    # a method in a class body: two-space indent, name, arguments, brace
    re.compile(rf"^ {{2}}(?:static\s+|async\s+|get\s+|set\s+)*{_JS_NAME}\s*\([^)]*\)\s*\{{\s*$"),
], _JS_KEYWORDS)

typescript_defs = _by_line([
    re.compile(rf"^export\s+(?:default\s+)?(?:declare\s+)?(?:abstract\s+)?(?:async\s+)?"
               rf"(?:function\s*\*?|class|interface|type|enum|namespace|const|let|var)\s+{_JS_NAME}"),
    re.compile(rf"^(?:declare\s+)?(?:abstract\s+)?(?:async\s+)?(?:function\s*\*?|class|interface|enum)\s+"
               rf"{_JS_NAME}"),
], _JS_KEYWORDS)

go_defs = _by_line([
    re.compile(r"^func\s+(?:\([^)]*\)\s*)?(?P<name>[A-Za-z_]\w*)\s*[\[(]"),
    re.compile(r"^type\s+(?P<name>[A-Za-z_]\w*)\b"),
    re.compile(r"^(?:var|const)\s+(?P<name>[A-Za-z_]\w*)\b"),
])

_RS_VIS = r"(?:pub(?:\s*\([^)]*\))?\s+)?"
rust_defs = _by_line([
    re.compile(rf"^\s*{_RS_VIS}(?:(?:const|async|unsafe|extern\s+\"[^\"]*\")\s+)*fn\s+(?P<name>[A-Za-z_]\w*)"),
    re.compile(rf"^\s*{_RS_VIS}(?:unsafe\s+)?(?:struct|enum|union|trait|type)\s+(?P<name>[A-Za-z_]\w*)"),
    re.compile(rf"^\s*{_RS_VIS}mod\s+(?P<name>[A-Za-z_]\w*)\s*\{{"),
    re.compile(r"^\s*macro_rules!\s*(?P<name>[A-Za-z_]\w*)"),
    re.compile(rf"^{_RS_VIS}(?:const|static)\s+(?:mut\s+)?(?P<name>[A-Za-z_]\w*)\s*:"),
])

ruby_defs = _by_line([
    re.compile(r"^\s*def\s+(?:self\.)?(?P<name>[A-Za-z_]\w*[?!=]?)"),
    re.compile(r"^\s*(?:class|module)\s+(?:[A-Z]\w*::)*(?P<name>[A-Z]\w*)"),
])

_JAVA_MODS = r"(?:(?:public|protected|private|static|final|abstract|synchronized|native|default|strictfp)\s+)"
java_defs = _by_line([
    re.compile(rf"^\s*(?:@\w+(?:\([^)]*\))?\s+)*{_JAVA_MODS}*(?:class|interface|enum|record|@interface)\s+"
               r"(?P<name>[A-Za-z_]\w*)"),
    # a method or constructor: at least one modifier, then (for a method) a return type, name, "("
    re.compile(rf"^\s*(?:@\w+(?:\([^)]*\))?\s+)*{_JAVA_MODS}+(?:<[^>]*>\s+)?(?:[\w.$]+(?:<[^=;()]*>)?"
               r"(?:\[\])*\s+)?(?P<name>[A-Za-z_]\w*)\s*\("),
], frozenset({"if", "for", "while", "switch", "catch", "return", "new", "synchronized"}))

_C_KEYWORDS = frozenset({"if", "for", "while", "switch", "return", "sizeof", "else", "do", "case", "typedef",
                         "defined", "static_assert", "decltype", "alignof", "operator", "catch", "throw", "new", "delete",
                         "noexcept", "alignas", "__attribute__"})
# A function header (return type, possibly on the line before) names the function (``Class::method`` in
# C++; a destructor is looked up by its class), opens its arguments; it is a definition when ``{`` comes
# before any ``;``.  Indented ones too: a method defined in its class body.
_C_HEAD = re.compile(r"^[ \t]*(?![\s#}/*:])(?:[\w\s\*&<>:,]*?[\s\*&])?(?:[A-Za-z_]\w*::)*(?P<name>[A-Za-z_]\w*)\s*\(")
_C_TAG = re.compile(r"^\s*(?:typedef\s+)?(?:struct|union|enum|class)\s+(?:\w+\s+)*?(?P<name>[A-Za-z_]\w*)\s*"
                    r"(?:final\s*)?(?::[^;{]*)?\{?\s*$")
_C_TYPEDEF_END = re.compile(r"^\}\s*(?P<name>[A-Za-z_]\w*)\s*;")
_C_TYPEDEF_START = re.compile(r"^typedef\s+(?:struct|union|enum)\b[^;]*$")
_CPP_NAMESPACE = re.compile(r"^\s*namespace\s+(?P<name>[A-Za-z_]\w*)\s*\{")


def _body_follows(lines: list[str], i: int) -> bool:
    """Does a ``{`` open before a ``;`` ends the declaration starting at line ``i`` (0-based)?"""
    for line in lines[i: i + 12]:
        code = line.split("//", 1)[0]
        brace, semi = code.find("{"), code.find(";")
        if brace >= 0 and (semi < 0 or brace < semi):
            return True
        if semi >= 0:
            return False
    return False


_C_COMMENT_OR_STRING = re.compile(r'"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'|/\*.*?\*/|//[^\n]*', re.DOTALL)
_INIT_LIST_ITEM = re.compile(r"\)\s*,\s*$")  # ``  member_(0),`` in a constructor's initialiser list


def _without_comments(text: str) -> str:
    """Comments blanked out (their newlines kept, so line numbers stay); strings kept."""
    return _C_COMMENT_OR_STRING.sub(
        lambda m: m.group(0) if m.group(0)[0] in "\"'" else re.sub(r"[^\n]", " ", m.group(0)), text)


def c_defs(text: str) -> list[tuple[str, int]]:
    lines = _without_comments(text).splitlines()
    out = []
    prev = ""
    in_typedef = False  # ``} Name;`` names a type only after ``typedef struct {``, else it is a variable
    for i, line in enumerate(lines):
        if _C_TYPEDEF_START.match(line):
            in_typedef = True
        after_comma = prev.endswith((",", ":")) and not prev.endswith("::")
        if line.strip():
            prev = line.rstrip()
        for rx in (_C_HEAD, _C_TAG, _C_TYPEDEF_END, _CPP_NAMESPACE):
            m = rx.match(line)
            if not m or m.group("name") in _C_KEYWORDS or m.group("name").isupper():
                continue  # ALL_CAPS( is a macro call
            if rx is _C_HEAD and line[:1].isspace() and (after_comma or _INIT_LIST_ITEM.search(line)):
                continue  # a continuation: an argument, a member initialiser
            if rx is _C_TYPEDEF_END and not in_typedef:
                continue
            if rx is _C_TYPEDEF_END or rx is _CPP_NAMESPACE or _body_follows(lines, i):
                out.append((m.group("name"), i + 1))
                break
        if line.startswith("}"):
            in_typedef = False
    return out


FINDERS: dict[str, Finder] = {
    "python": python_defs, "javascript": javascript_defs, "typescript": typescript_defs, "go": go_defs,
    "rust": rust_defs, "ruby": ruby_defs, "java": java_defs, "c": c_defs, "cpp": c_defs,
}


def definitions(lang: str, files: list[Path]) -> list[tuple[str, Path, int]]:
    """(name, file, line) of every definition in ``files`` by ``lang``'s rule."""
    find = FINDERS[lang]
    out = []
    for f in files:
        try:
            text = f.read_text(encoding="utf-8")
            found = find(text)
        except (UnicodeDecodeError, SyntaxError, ValueError):
            continue
        out += [(name, f, line) for name, line in found]
    return out
