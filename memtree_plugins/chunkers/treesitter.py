"""Code by definition in many languages, with tree-sitter and the per-language grammar wheels from PyPI.

Covers JavaScript, TypeScript/TSX, Go, Rust, Java, C, C++ and Ruby (Python keeps its ``ast`` chunker,
which also knows docstrings).  Chunks tile the file like the Python chunker's:

* one chunk per top-level definition (function, class, struct, interface, impl, namespace ...), with the
  comment block right above it; ``symbol`` is its qualified name (``Class.method``), and ``name``,
  ``signature`` and ``parent`` say what it is and where it sits;
* a container longer than ``class_split_lines`` (a class, impl block, namespace ...) becomes a header chunk
  followed by one chunk per member definition, whose ``parent`` is the container's qualified name;
* top-level code between definitions is grouped into ``module_header`` / ``statements`` chunks;
* a definition longer than ``max_lines`` is cut into parts that each carry its signature in the outline;
* module values a developer looks up by name are definitions too: an exported JS/TS ``const``, a Go
  ``var``/``const`` naming one value, Rust ``const``/``static`` items.

Real code the grammars misread is met halfway (each case found by ``python -m eval.bench symbols``): a
``.h`` header that reads as C++ is parsed as C++; export and annotation macros (``class GTEST_API_ Foo``,
``void f() LOCKS_EXCLUDED(mu) {``) are blanked before parsing; a region the grammar cannot parse keeps the
whole definitions inside it, and a long one is parsed again in pieces so it costs only its own lines.

A grammar whose wheel is missing is simply not matched, so those files keep 200-line windows;
:func:`availability` says which languages are on (``memtree info`` prints it).
"""

from __future__ import annotations

import importlib
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from memtree_core.types import Chunk
from memtree_plugins.chunkers.treesitter_refs import treesitter_refs
from memtree_plugins.lib.code_refs import attach
from memtree_plugins.lib.lines import crop, make_chunk, split_lines
from memtree_plugins.lib.window import WINDOW_LINES

CLASS_SPLIT_LINES = 80
MAX_DEF_LINES = WINDOW_LINES
_MAX_DEPTH = 4  # containers inside containers (namespace > class > inner class > method)


@dataclass(frozen=True)
class Grammar:
    """How one language spells its definitions in tree-sitter node types."""

    module: str  # the grammar wheel's import name
    factory: str  # the function in it returning the language pointer
    suffixes: tuple[str, ...]
    defs: dict[str, str]  # node type -> chunk kind
    containers: frozenset[str] = frozenset()  # def node types whose body holds member definitions
    wrappers: frozenset[str] = frozenset()  # node types that wrap one definition (export, template ...)
    member_kind: dict[str, str] = field(default_factory=dict)  # kind of a def when inside a container


_JS_DEFS = {"function_declaration": "function", "generator_function_declaration": "function",
            "class_declaration": "class", "method_definition": "method"}
_TS_DEFS = {**_JS_DEFS, "abstract_class_declaration": "class", "interface_declaration": "interface",
            "type_alias_declaration": "type", "enum_declaration": "enum", "internal_module": "namespace",
            "module": "namespace", "function_signature": "function", "abstract_method_signature": "method"}
_JS_CONTAINERS = frozenset({"class_declaration", "abstract_class_declaration", "internal_module", "module",
                            "class", "interface_declaration"})
_JS_WRAPPERS = frozenset({"export_statement", "ambient_declaration"})
_C_DEFS = {"function_definition": "function", "struct_specifier": "struct", "union_specifier": "union",
           "enum_specifier": "enum", "type_definition": "type"}
_CPP_DEFS = {**_C_DEFS, "class_specifier": "class", "namespace_definition": "namespace"}

GRAMMARS: dict[str, Grammar] = {
    "javascript": Grammar("tree_sitter_javascript", "language", (".js", ".mjs", ".cjs", ".jsx"),
                          _JS_DEFS, _JS_CONTAINERS, _JS_WRAPPERS),
    "typescript": Grammar("tree_sitter_typescript", "language_typescript", (".ts", ".mts", ".cts"),
                          _TS_DEFS, _JS_CONTAINERS, _JS_WRAPPERS),
    "tsx": Grammar("tree_sitter_typescript", "language_tsx", (".tsx",), _TS_DEFS, _JS_CONTAINERS, _JS_WRAPPERS),
    "go": Grammar("tree_sitter_go", "language", (".go",),
                  {"function_declaration": "function", "method_declaration": "method", "type_spec": "type"},
                  wrappers=frozenset({"type_declaration"})),
    "rust": Grammar("tree_sitter_rust", "language", (".rs",),
                    {"function_item": "function", "struct_item": "struct", "enum_item": "enum",
                     "union_item": "union", "trait_item": "trait", "impl_item": "impl", "mod_item": "module",
                     "macro_definition": "macro", "type_item": "type", "function_signature_item": "function",
                     "const_item": "constant", "static_item": "variable"},
                    frozenset({"impl_item", "trait_item", "mod_item"}), member_kind={"function": "method"}),
    "java": Grammar("tree_sitter_java", "language", (".java",),
                    {"class_declaration": "class", "interface_declaration": "interface", "enum_declaration": "enum",
                     "record_declaration": "record", "annotation_type_declaration": "interface",
                     "method_declaration": "method", "constructor_declaration": "method",
                     "annotation_type_element_declaration": "method", "compact_constructor_declaration": "method"},
                    frozenset({"class_declaration", "interface_declaration", "enum_declaration",
                               "record_declaration", "annotation_type_declaration"})),
    "c": Grammar("tree_sitter_c", "language", (".c", ".h"), _C_DEFS),
    "cpp": Grammar("tree_sitter_cpp", "language", (".cc", ".cpp", ".cxx", ".c++", ".hh", ".hpp", ".hxx", ".h++"),
                   _CPP_DEFS, frozenset({"class_specifier", "struct_specifier", "namespace_definition"}),
                   frozenset({"template_declaration", "declaration", "field_declaration"}),
                   member_kind={"function": "method"}),
    "ruby": Grammar("tree_sitter_ruby", "language", (".rb", ".rake", ".gemspec"),
                    {"method": "method", "singleton_method": "method", "class": "class", "module": "module",
                     "singleton_class": "class"},
                    frozenset({"class", "module", "singleton_class"})),
}
# Top-level Ruby ``def``s are functions; methods only inside a class or module.
_TOP_KIND = {"ruby": {"method": "function"}}

_BODY_TYPES = frozenset({"class_body", "declaration_list", "field_declaration_list", "body_statement",
                         "interface_body", "enum_body", "statement_block", "object_type", "annotation_type_body",
                         "enum_body_declarations"})
# Wrappers around many definitions (include guards, ``#ifdef`` blocks, ``extern "C" { }``): their insides
# are chunked as if they stood at this level, else a whole header would be one chunk.  So is a region the
# grammar could not parse (a macro it cannot expand): the whole definitions it still holds keep their chunks.
_TRANSPARENT = frozenset({"preproc_ifdef", "preproc_if", "preproc_else", "preproc_elif", "preproc_elifdef",
                          "linkage_specification", "declaration_list", "ERROR"})
# Rust and Java name their comments by form (``///`` doc comments are line_comment nodes).
_COMMENTS = frozenset({"comment", "line_comment", "block_comment"})
_FUNCTION_VALUES = frozenset({"arrow_function", "function_expression", "function", "generator_function"})
_CLASS_VALUES = frozenset({"class", "class_expression"})
_NAME_TYPES = frozenset({"identifier", "field_identifier", "type_identifier", "property_identifier",
                         "qualified_identifier", "destructor_name", "operator_name", "constant",
                         "scope_resolution", "private_property_identifier", "namespace_identifier"})


@dataclass
class _Piece:
    start: int
    end: int
    kind: str
    symbol: str | None
    outline: str
    name: str | None = None
    signature: str = ""
    parent: str | None = None
    members: tuple[str, ...] = ()
    part: int = 0


# -- grammar loading -----------------------------------------------------------------------------------
_lock = threading.Lock()
_languages: dict[str, Any] = {}
_missing: dict[str, str] = {}


def _language(lang: str) -> Any | None:
    """The tree-sitter Language for ``lang``, loaded once; None (and the reason kept) when unavailable."""
    with _lock:
        if lang in _languages:
            return _languages[lang]
        if lang in _missing:
            return None
        g = GRAMMARS[lang]
        try:
            import tree_sitter

            mod = importlib.import_module(g.module)
            _languages[lang] = tree_sitter.Language(getattr(mod, g.factory)())
            return _languages[lang]
        except Exception as exc:  # no wheel, or a grammar built for another tree-sitter ABI
            _missing[lang] = f"{type(exc).__name__}: {exc}"
            return None


def availability() -> dict[str, str | None]:
    """Each language -> None when its grammar loads, else why not (for ``memtree info``)."""
    return {lang: (None if _language(lang) is not None else _missing.get(lang, "unavailable"))
            for lang in GRAMMARS}


def language_of(path: str, text: str | None = None) -> str | None:
    """The grammar for ``path``; a ``.h`` header whose ``text`` reads as C++ is C++ (gtest, Qt, pybind11 and
    most C++ libraries name their headers ``.h``, and the C grammar cannot see their classes)."""
    low = path.lower()
    for lang, g in GRAMMARS.items():
        if low.endswith(g.suffixes):
            if lang == "c" and low.endswith(".h") and text is not None and _CPP_HEADER.search(text):
                return "cpp"
            return lang
    return None


# Constructs only C++ has, at the start of a line: a namespace, a template, an access label, a class with
# a body or a base list, ``using``.  (``extern "C"`` guards and ``#ifdef __cplusplus`` say nothing: C
# headers carry them to be usable from C++.)
_CPP_HEADER = re.compile(
    r"^[ \t]*(?:namespace(?:[ \t]+[A-Za-z_][\w:]*)?[ \t]*\{|template[ \t]*<|(?:public|private|protected)[ \t]*:"
    r"|class[ \t]+[A-Za-z_]\w*(?:[ \t]+[A-Za-z_]\w*)*[ \t]*(?:final[ \t]*)?[:{]|using[ \t]+namespace[ \t]"
    r"|using[ \t]+[A-Za-z_]\w*[ \t]*=)", re.MULTILINE)


# -- reading definitions out of the tree ---------------------------------------------------------------
def _text(node: Any) -> str:
    return node.text.decode("utf-8", "replace") if node is not None and node.text is not None else ""


def _last_line(node: Any) -> int:
    """1-based last line of ``node`` (a node ending at column 0 ends on the line before)."""
    row, col = node.end_point
    return max(node.start_point[0] + 1, row if col == 0 else row + 1)


def _declarator_name(node: Any) -> Any | None:
    """C/C++: follow ``declarator`` fields down to the declared name (``int *(*f)(void)`` -> ``f``)."""
    seen = 0
    while node is not None and seen < 12:
        if node.type in _NAME_TYPES:
            return node
        nxt = node.child_by_field_name("declarator")
        if nxt is None:  # ``T& f()``: a reference_declarator holds its declarator without the field name
            nxt = next((c for c in node.named_children if c.type in _NAME_TYPES
                        or c.type.endswith("_declarator")), None)
        node, seen = nxt, seen + 1
    return None


def _receiver_type(node: Any) -> str | None:
    """Go: ``func (s *Server) Run()`` -> ``Server``."""
    recv = node.child_by_field_name("receiver")
    if recv is None:
        return None
    for p in recv.named_children:
        t = p.child_by_field_name("type")
        while t is not None and t.type in ("pointer_type", "generic_type", "parenthesized_type"):
            t = t.child_by_field_name("type") or next((c for c in t.named_children), None)
        if t is not None:
            return _text(t)
    return None


def _name_of(node: Any) -> str | None:
    t = node.type
    if t == "impl_item":  # Rust: ``impl Trait for Type`` is named by the type
        ty = node.child_by_field_name("type")
        return _text(ty).split("<", 1)[0] if ty is not None else None
    if t in ("function_definition", "type_definition") or (t == "declaration"):
        n = _declarator_name(node.child_by_field_name("declarator"))
        return _text(n) if n is not None else None
    n = node.child_by_field_name("name")
    if n is None and t == "singleton_class":
        return "self"
    if n is None:
        return None
    return _text(n)


def _dotted(name: str) -> str:
    """``A::b`` / ``A.prototype.b`` / ``exports.b`` -> dotted, the form a developer types in a query."""
    name = name.replace("::", ".").replace(".prototype.", ".")
    return name[8:] if name.startswith("exports.") else name


@dataclass
class _Def:
    node: Any  # the definition (inside any wrapper)
    outer: Any  # the node whose range the chunk covers (the wrapper, or the def itself)
    kind: str
    name: str


def _assigned_def(node: Any) -> tuple[Any, str, str] | None:
    """JS/TS: ``const f = () => …``, ``exports.f = function …``, ``A.prototype.f = function …``."""
    if node.type in ("lexical_declaration", "variable_declaration"):
        decls = [c for c in node.named_children if c.type == "variable_declarator"]
        if len(decls) != 1:
            return None
        name, value = decls[0].child_by_field_name("name"), decls[0].child_by_field_name("value")
    elif node.type == "expression_statement" and node.named_children and \
            node.named_children[0].type == "assignment_expression":
        a = node.named_children[0]
        name, value = a.child_by_field_name("left"), a.child_by_field_name("right")
    else:
        return None
    if name is None or value is None:
        return None
    if value.type in _FUNCTION_VALUES:
        return value, "function", _text(name)
    if value.type in _CLASS_VALUES:
        return value, "class", _text(name)
    return None


def _exported_value(node: Any) -> _Def | None:
    """JS/TS: ``export const EMPTY = new Observable(…)``: a module's exported value is a name developers
    look up like a function's (``asyncScheduler``, ``config``); one declarator, else it stays statements."""
    if node.type != "export_statement":
        return None
    decl = next((c for c in node.named_children if c.type in ("lexical_declaration", "variable_declaration")),
                None)
    if decl is None:
        return None
    decls = [c for c in decl.named_children if c.type == "variable_declarator"]
    name = decls[0].child_by_field_name("name") if len(decls) == 1 else None
    if name is None or name.type != "identifier":
        return None
    kind = "constant" if decl.children and decl.children[0].type == "const" else "variable"
    return _Def(decl, node, kind, _text(name))


def _go_value(node: Any) -> _Def | None:
    """Go: ``var ErrNotFound = errors.New(…)`` / ``const Max = 3`` naming one value is its definition; a
    grouped ``var ( … )`` block stays statements (one chunk per line of it would say nothing)."""
    specs = [c for c in node.named_children if c.type in ("var_spec", "const_spec")]
    names = [c for c in specs[0].children_by_field_name("name")] if len(specs) == 1 else []
    if len(names) != 1:
        return None
    return _Def(node, node, "constant" if node.type == "const_declaration" else "variable", _text(names[0]))


def _flatten(children: list[Any], depth: int = 0, resync: Callable[[Any], list[Any]] | None = None) -> list[Any]:
    out: list[Any] = []
    for c in children:
        if depth >= 8:
            out.append(c)
        elif c.type == "ERROR" and resync is not None:
            out += _flatten(resync(c), depth + 1)
        elif c.type in _TRANSPARENT:
            out += _flatten(list(c.children), depth + 1)
        elif c.type == "namespace_definition" and c.child_by_field_name("name") is None:
            # C++ ``namespace { … }`` names nothing a developer types: its definitions stand at this level
            body = c.child_by_field_name("body")
            out += _flatten(list(body.children), depth + 1) if body is not None else [c]
        else:
            out.append(c)
    return out


# A top-level region the grammar could not parse (syntax newer than the grammar, a macro it cannot expand)
# swallows every definition after the point it lost track.  A region this long is parsed again in pieces,
# each starting at a line that starts at column 0 (where top-level code starts in every covered language),
# so one bad construct costs its own lines only.  Closing words and preprocessor lines do not start one.
RESYNC_MIN_LINES = 12
_RESYNC_START = re.compile(r"(?!(?:end|else|elsif|elif|rescue|ensure|when|catch|finally|while|case|default)\b)"
                           r"[A-Za-z_$@]")


class _Resyncer:
    """Parses a long ERROR region again piece by piece (see ``RESYNC_MIN_LINES``)."""

    def __init__(self, parser: Any, source: bytes, lines: list[str]) -> None:
        self.parser, self.source, self.lines = parser, source, lines
        self.line_starts = [0]
        for ln in lines:
            self.line_starts.append(self.line_starts[-1] + len(ln.encode("utf-8", "surrogatepass")))

    def __call__(self, node: Any) -> list[Any]:
        import tree_sitter

        first, last = node.start_point[0], node.end_point[0]
        if last - first < RESYNC_MIN_LINES:
            return list(node.children)
        cuts = [r for r in range(first + 1, min(last, len(self.lines) - 1) + 1)
                if _RESYNC_START.match(self.lines[r])]
        if not cuts:
            return list(node.children)
        bounds = [node.start_byte, *(self.line_starts[r] for r in cuts), node.end_byte]
        out: list[Any] = []
        try:
            for a, b in zip(bounds, bounds[1:], strict=False):
                if b <= a:
                    continue
                self.parser.included_ranges = [tree_sitter.Range(self._point(a), self._point(b), a, b)]
                out += list(self.parser.parse(self.source).root_node.children)
        finally:
            self.parser.included_ranges = []
        return out

    def _point(self, byte: int) -> tuple[int, int]:
        import bisect

        row = bisect.bisect_right(self.line_starts, byte) - 1
        return row, byte - self.line_starts[row]


class _Reader:
    def __init__(self, lang: str, lines: list[str], class_split_lines: int, max_lines: int,
                 resync: Callable[[Any], list[Any]] | None = None) -> None:
        self.lang = lang
        self.g = GRAMMARS[lang]
        self.lines = lines
        self.class_split_lines = class_split_lines
        self.max_lines = max_lines
        self.resync = resync

    def as_def(self, node: Any, inside: bool) -> _Def | None:
        g, outer = self.g, node
        for _ in range(3):  # export default class …, template<…> class …, declare module …
            if node.type not in g.wrappers:
                break
            inner = next((c for c in node.named_children if c.type in g.defs or c.type in g.wrappers
                          or _assigned_def(c) is not None), None)
            if inner is None:
                return _exported_value(node)
            node = inner
        if node.type in ("declaration", "field_declaration"):
            return None  # a C++ wrapper without a definition inside (a plain declaration)
        if node.type in g.defs:
            if node.type in ("struct_specifier", "union_specifier", "enum_specifier", "class_specifier") \
                    and node.child_by_field_name("body") is None:
                return None  # ``struct foo;`` / ``struct foo *p;`` declares, does not define
            name = _name_of(node)
            if not name:
                return None
            kind = g.defs[node.type]
            if inside:
                kind = g.member_kind.get(kind, kind)
            else:
                kind = _TOP_KIND.get(self.lang, {}).get(node.type, kind)
            if node.type == "type_spec":  # Go: say struct/interface when it is one
                ty = node.child_by_field_name("type")
                kind = {"struct_type": "struct", "interface_type": "interface"}.get(ty.type if ty else "", kind)
            if node.type == "method_declaration" and self.lang == "go":
                recv = _receiver_type(node)
                name = f"{recv}.{name}" if recv else name
            return _Def(node, outer, kind, name)
        if node.type in ("var_declaration", "const_declaration") and self.lang == "go":
            return _go_value(node)
        assigned = _assigned_def(node)
        if assigned is not None:
            value, kind, name = assigned
            return _Def(value, outer, "method" if inside and kind == "function" else kind, name)
        return None

    def signature(self, d: _Def) -> str:
        """The definition's text up to its body, on one line."""
        body = self.body_of(d.node) or d.node.child_by_field_name("body")
        start = d.outer.start_byte
        stop = body.start_byte if body is not None and body.start_byte > start else d.outer.end_byte
        raw = (d.outer.text or b"")[: stop - start].decode("utf-8", "replace")
        if body is None:  # no body to stop at (a Go type, a C typedef): the first line says enough
            raw = raw.split("\n", 1)[0]
        sig = " ".join(raw.split())
        return crop(sig.rstrip("{:= "), 240)

    def body_of(self, node: Any) -> Any | None:
        b = node.child_by_field_name("body")
        if b is not None and b.type in _BODY_TYPES:
            return b
        if node.type == "type_spec":
            return None
        for c in node.named_children:
            if c.type in _BODY_TYPES:
                return c
        return b

    def members(self, d: _Def) -> tuple[Any, list[Any]] | None:
        if d.node.type not in self.g.containers and d.kind != "class":
            return None
        body = self.body_of(d.node)
        if body is None:
            return None
        kids = list(body.children)
        if self.lang == "ruby" and body.type != "body_statement":
            kids = list(d.node.children)
        return body, kids

    # -- pieces --------------------------------------------------------------------------------------
    def pieces(self, children: list[Any], prefix: str, parent: str | None, depth: int,
               top: bool) -> list[_Piece]:
        out: list[_Piece] = []
        seen_def = False
        run: list[Any] = []
        comments: list[Any] = []

        def flush_run() -> None:
            nonlocal run
            if not run:
                return
            start, end = run[0].start_point[0] + 1, _last_line(run[-1])
            if not top:
                kind, symbol = "class_body", parent
            elif not seen_def:
                kind, symbol = "module_header", None
            else:
                kind, symbol = "statements", None
            heads = [crop(self.lines[n.start_point[0]].strip(), 120) for n in run[:5]
                     if n.start_point[0] < len(self.lines)]
            if len(run) > 5:
                heads.append(f"… {len(run) - 5} more statements")
            outline = "\n".join(dict.fromkeys(heads))
            for a in range(start, end + 1, self.max_lines):  # a long stretch of plain code: in windows
                out.append(_Piece(a, min(a + self.max_lines - 1, end), kind, symbol, outline, parent=parent))
            run = []

        for child in _flatten(children, resync=self.resync if top else None):
            if not child.is_named:
                continue
            if child.type in _COMMENTS:
                comments.append(child)
                continue
            d = self.as_def(child, inside=not top)
            if d is None:
                run += comments + [child]
                comments = []
                continue
            # The comment block above (at most one blank line between: JSDoc often has one) belongs to the
            # definition; a comment opening the file is the file's header, not the first function's.
            attached: list[Any] = []
            while comments and comments[-1].end_point[0] + 2 >= (attached[0] if attached else d.outer
                                                                ).start_point[0]:
                attached.insert(0, comments.pop())
            if attached and top and attached[0].start_point[0] == 0:
                comments += attached
                attached = []
            run += comments
            comments = []
            flush_run()
            seen_def = True
            out += self.definition(d, attached[0].start_point[0] + 1 if attached else None, prefix, parent,
                                   depth)
        run += comments
        flush_run()
        return out

    def definition(self, d: _Def, comment_start: int | None, prefix: str, parent: str | None,
                   depth: int) -> list[_Piece]:
        start = comment_start or d.outer.start_point[0] + 1
        end = _last_line(d.outer)
        qual = prefix + _dotted(d.name)
        name = qual.rsplit(".", 1)[-1]
        if parent is None and "." in qual:  # ``func (s *Srv) Run``, ``void A::f() {}`` defined outside A
            parent = qual.rsplit(".", 1)[0]
        sig = self.signature(d)
        context = [f"in {parent}"] if parent else []
        outline = "\n".join(context + [sig])
        head = _Piece(start, end, d.kind, qual, outline, name, sig, parent)
        mem = self.members(d) if depth < _MAX_DEPTH else None
        if mem is not None:
            body, kids = mem
            inner = self.pieces(kids, qual + ".", qual, depth + 1, top=False)
            head.members = tuple(dict.fromkeys(p.symbol for p in inner if p.symbol and p.symbol != qual))
        if mem is not None and end - start + 1 > self.class_split_lines:
            while inner and inner[0].kind == "class_body":
                inner.pop(0)  # fields before the first member stay with the header
            head.members = ()
            if any(p.symbol != qual for p in inner):
                listed = [p.signature for p in inner if p.parent == qual and p.signature][:15]
                head.outline = "\n".join([outline, *("    " + s for s in listed)])
                head.end = inner[0].start - 1
                inner[-1].end = end
                return [head, *self._split_long(inner)]
        return self._split_long([head])

    def _split_long(self, pieces: list[_Piece]) -> list[_Piece]:
        """A definition longer than ``max_lines`` becomes parts, each carrying its signature."""
        out: list[_Piece] = []
        for p in pieces:
            n = p.end - p.start + 1
            if n <= self.max_lines or p.symbol is None:
                out.append(p)
                continue
            parts = -(-n // self.max_lines)
            for i, a in enumerate(range(p.start, p.end + 1, self.max_lines)):
                b = min(a + self.max_lines - 1, p.end)
                outline = p.outline if i == 0 else f"{p.outline}\n    … part {i + 1}/{parts}"
                out.append(_Piece(a, b, p.kind, p.symbol, outline, p.name, p.signature, p.parent, part=i + 1))
        return out


def _tile(pieces: list[_Piece], lo: int, hi: int) -> list[_Piece]:
    """Stretch pieces so they cover ``lo..hi`` exactly: each ends where the next starts."""
    merged: list[_Piece] = []
    for p in sorted(pieces, key=lambda p: p.start):
        if merged and p.start <= merged[-1].start:
            continue  # shares a first line with the previous piece (two defs on one line)
        merged.append(p)
    for i, p in enumerate(merged):
        p.start = lo if i == 0 else p.start
        p.end = merged[i + 1].start - 1 if i + 1 < len(merged) else hi
    return merged


# Annotation macros the grammar cannot know, which make it misread a definition and lose what follows:
# an export macro between ``class``/``struct`` and the name (``class GTEST_API_ Foo : public Bar {``), and
# a thread-safety or attribute macro after a function's arguments (``void f() const LOCKS_EXCLUDED(mu) {``,
# read as a function named LOCKS_EXCLUDED).  Only ALL_CAPS names with an underscore, where no C++ can stand.
_EXPORT_MACRO = re.compile(r"\b(?:class|struct|union)[ \t]+(?:alignas\([^)]*\)[ \t]*)?([A-Z][A-Z0-9]*_[A-Z0-9_]*)"
                           r"(?=[ \t]+[A-Za-z_]\w*(?:[ \t]+final)?[ \t]*(?:[:{]|\n|$))", re.MULTILINE)
_TRAILING_MACRO = re.compile(r"(?<=\))((?:\s*(?:const|override|final|noexcept|volatile|&&?)\b)*\s*)"
                             r"([A-Z][A-Z0-9]*_[A-Z0-9_]*(?:\([^()\n]*(?:\([^()\n]*\)[^()\n]*)*\))?)"
                             r"(?=[ \t]*(?:[{;:]|override\b|final\b|$|[A-Z][A-Z0-9]*_))", re.MULTILINE)


def _blank(m: re.Match[str], group: int = 0) -> str:
    """``m``'s text with ``group`` turned into spaces, as many as its UTF-8 bytes: every line and byte offset
    stays put."""
    a, b = m.start(group) - m.start(0), m.end(group) - m.start(0)
    spaces = re.sub(r"[^\n]", lambda c: " " * len(c.group().encode("utf-8", "surrogatepass")), m.group(group))
    return m.group(0)[:a] + spaces + m.group(0)[b:]


def _blank_macros(text: str) -> str:
    """The C/C++ text with the constructs above blanked out."""
    text = _EXPORT_MACRO.sub(lambda m: _blank(m, 1), text)
    return _TRAILING_MACRO.sub(lambda m: _blank(m, 2), text)


class TreeSitterChunker:
    """One chunk per definition for the languages whose grammar wheel is installed."""

    name = "treesitter"
    priority = 90  # below the Python ast chunker (100), above windows (0)

    def __init__(self, class_split_lines: int = CLASS_SPLIT_LINES, max_lines: int = MAX_DEF_LINES,
                 references: bool = True) -> None:
        self.class_split_lines = class_split_lines
        self.max_lines = max_lines
        self.references = references  # read each chunk's references (calls, imports, bases, types)
        self._local = threading.local()  # a Parser is not safe to share between threads

    def availability(self) -> dict[str, str | None]:
        return availability()

    def matches(self, path: str) -> bool:
        lang = language_of(path)
        return lang is not None and _language(lang) is not None

    def _parser(self, lang: str) -> Any:
        import tree_sitter

        parsers = self._local.__dict__.setdefault("parsers", {})
        if lang not in parsers:
            parsers[lang] = tree_sitter.Parser(_language(lang))
        return parsers[lang]

    def chunk(self, path: str, text: str) -> list[Chunk]:
        lines = split_lines(text)
        if not lines:
            return []
        lang = language_of(path, text)
        if lang == "cpp" and _language(lang) is None:
            lang = "c"  # a C++ header, without the C++ grammar: the C one still finds its functions
        if lang is None or _language(lang) is None:
            raise ValueError(f"no tree-sitter grammar for {path}")
        source = (_blank_macros(text) if lang in ("c", "cpp") else text).encode("utf-8", "surrogatepass")
        parser = self._parser(lang)
        tree = parser.parse(source)
        root = tree.root_node
        resync = _Resyncer(parser, source, lines) if root.has_error else None
        reader = _Reader(lang, lines, self.class_split_lines, self.max_lines, resync)
        pieces = reader.pieces([root] if root.type == "ERROR" else list(root.children), "", None, 0, top=True)
        if not pieces:
            pieces = [_Piece(1, len(lines), "module_header", None, crop(next(
                (ln for ln in lines if ln.strip()), "")))]
        if pieces[0].start > 1 and any(ln.strip() for ln in lines[: pieces[0].start - 1]):
            pieces.insert(0, _Piece(1, pieces[0].start - 1, "module_header", None,
                                    crop(next(ln for ln in lines if ln.strip()))))
        tiled = _tile(pieces, 1, len(lines))
        chunks = [replace(make_chunk(lines, p.start, p.end, p.kind, p.symbol, p.outline), name=p.name,
                          signature=p.signature, parent=p.parent, members=p.members, part=p.part) for p in tiled]
        if not self.references:
            return chunks
        try:
            refs = treesitter_refs(lang, _language(lang), root, path)
        except Exception:  # a tree shaped as no query expected: the chunks, without references
            refs = []
        return attach(chunks, refs)
