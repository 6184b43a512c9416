"""References in the tree-sitter languages, read with one query per grammar (run in C, so a file costs its
matches, not a walk of every node in Python); see :mod:`memtree_plugins.lib.code_refs`.

Captures: ``@call`` (the callee of a call or ``new``: a name or a member/selector/field expression),
``@inherits`` (a base class, an implemented interface, an embedded Go struct), ``@type`` (a type name),
``@import`` (an import statement, read by language).  ``this.m()`` / ``self.m()`` in a class and a Go
method's ``recv.M()`` become ``Class.m``; ``super.m()`` is looked up in the class's bases.
"""

from __future__ import annotations

import posixpath
import threading
from typing import Any

from memtree_plugins.chunkers.treesitter_types import FileTypes
from memtree_plugins.lib.code_refs import TYPED, Ref

_JS = """
(call_expression function: [(identifier) (member_expression)] @call)
(new_expression constructor: [(identifier) (member_expression)] @call)
(class_heritage [(identifier) (member_expression)] @inherits)
(import_statement) @import
(export_statement source: (string)) @import
"""
_TS = """
(call_expression function: [(identifier) (member_expression)] @call)
(new_expression constructor: [(identifier) (member_expression)] @call)
(extends_clause value: [(identifier) (member_expression)] @inherits)
(implements_clause [(type_identifier) (nested_type_identifier)] @inherits)
(extends_type_clause [(type_identifier) (nested_type_identifier)] @inherits)
[(type_identifier) (nested_type_identifier)] @type
(import_statement) @import
(export_statement source: (string)) @import
"""
QUERIES: dict[str, str] = {
    "javascript": _JS,
    "typescript": _TS,
    "tsx": _TS,
    "go": """
(call_expression function: [(identifier) (selector_expression)] @call)
(field_declaration_list (field_declaration !name type: [(type_identifier) (qualified_type)] @inherits))
[(type_identifier) (qualified_type)] @type
(import_spec) @import
""",
    "java": """
(method_invocation) @call
(object_creation_expression type: (type_identifier) @call)
(superclass (type_identifier) @inherits)
(super_interfaces (type_list (type_identifier) @inherits))
(type_identifier) @type
""",
    "rust": """
(call_expression function: [(identifier) (scoped_identifier) (field_expression)] @call)
(type_identifier) @type
""",
    "c": """
(call_expression function: [(identifier) (field_expression)] @call)
(type_identifier) @type
""",
    "cpp": """
(call_expression function: [(identifier) (field_expression) (qualified_identifier)] @call)
(base_class_clause [(type_identifier) (qualified_identifier)] @inherits)
(type_identifier) @type
""",
    "ruby": """
(call method: (identifier) @call)
(superclass [(constant) (scope_resolution)] @inherits)
""",
}
_CLASSES = frozenset({"class_declaration", "class", "abstract_class_declaration", "class_specifier",
                      "struct_specifier", "impl_item", "interface_declaration", "record_declaration"})
_SELF = frozenset({"this", "self"})
_TYPED = frozenset({"go", "typescript", "tsx"})  # receivers typed from the file (treesitter_types)

_lock = threading.Lock()
_compiled: dict[str, Any] = {}


def _query(lang: str, language: Any) -> Any | None:
    with _lock:
        if lang not in _compiled:
            import tree_sitter

            try:
                _compiled[lang] = tree_sitter.Query(language, QUERIES[lang]) if lang in QUERIES else None
            except Exception:  # a grammar version naming its nodes otherwise: no references, chunks still
                _compiled[lang] = None
        return _compiled[lang]


def _text(node: Any) -> str:
    return node.text.decode("utf-8", "replace") if node is not None and node.text is not None else ""


def _dotted(node: Any) -> str | None:
    """A callee as a dotted name: ``a.b.c``, ``this.m``, ``pkg.F``, ``a::b`` (None for ``f()()``)."""
    t = node.type
    if t in ("identifier", "type_identifier", "field_identifier", "property_identifier", "constant",
             "package_identifier", "this", "self", "super"):
        return _text(node)
    if t in ("member_expression", "selector_expression", "field_expression"):
        obj = (node.child_by_field_name("object") or node.child_by_field_name("operand")
               or node.child_by_field_name("argument") or node.child_by_field_name("value"))
        prop = node.child_by_field_name("property") or node.child_by_field_name("field")
        head = _dotted(obj) if obj is not None else None
        return f"{head}.{_text(prop)}" if head and prop is not None else None
    if t in ("scoped_identifier", "qualified_identifier", "scope_resolution", "nested_type_identifier",
             "qualified_type"):
        return _text(node).replace("::", ".").replace(" ", "")
    if t == "method_invocation":  # Java: ``obj.m()`` / ``m()``
        obj, name = node.child_by_field_name("object"), node.child_by_field_name("name")
        head = _dotted(obj) if obj is not None else None
        return f"{head}.{_text(name)}" if head else _text(name) if obj is None else f".{_text(name)}"
    return None


def _enclosing(node: Any) -> tuple[str | None, tuple[str, str] | None]:
    """The innermost enclosing class's name, and a Go method's (receiver variable, receiver type)."""
    n = node.parent
    while n is not None:
        if n.type in _CLASSES:
            name = n.child_by_field_name("name") or n.child_by_field_name("type")
            return (_text(name).split("<", 1)[0] if name is not None else None), None
        if n.type == "method_declaration" and n.child_by_field_name("receiver") is not None:
            for p in n.child_by_field_name("receiver").named_children:
                var, ty = p.child_by_field_name("name"), p.child_by_field_name("type")
                while ty is not None and ty.type in ("pointer_type", "generic_type"):
                    ty = ty.named_children[0] if ty.named_children else None
                if var is not None and ty is not None:
                    return None, (_text(var), _text(ty))
            return None, None
        n = n.parent
    return None, None


def _concrete(name: str, node: Any) -> str:
    head, _, rest = name.partition(".")
    if not rest:
        return name
    if head in _SELF or head == "super":
        cls, _ = _enclosing(node)
        if cls:
            return f"super:{cls}.{rest}" if head == "super" else f"{cls}.{rest}"
        return "." + rest.rsplit(".", 1)[-1]
    if head[:1].islower():
        _, recv = _enclosing(node)
        if recv is not None and head == recv[0]:
            return f"{recv[1]}.{rest}"
    return name


def _string(node: Any) -> str:
    return _text(node).strip("'\"`")


_SCRIPT_SUFFIXES = (".js", ".mjs", ".cjs", ".jsx", ".ts", ".mts", ".cts", ".tsx")


def _module(spec: str, folder: str) -> str:
    """An import's module: a relative path made absolute from the importing file's directory, without its
    suffix (``./utils.js`` is the module ``utils``) or an ``index`` file's name (the directory is)."""
    if not spec.startswith("."):
        return spec
    path = posixpath.normpath(posixpath.join(folder, spec))
    if path.endswith(_SCRIPT_SUFFIXES):
        path = path.rsplit(".", 1)[0]
    return posixpath.dirname(path) if posixpath.basename(path) == "index" else path


def _imports(lang: str, node: Any, folder: str) -> list[Ref]:
    line = node.start_point[0] + 1
    out: list[Ref] = []
    if lang == "go":
        path = node.child_by_field_name("path")
        alias = node.child_by_field_name("name")
        mod = _string(path)
        name = _text(alias) if alias is not None else mod.rsplit("/", 1)[-1]
        if name not in ("_", "."):
            out.append(Ref("imports", name, line, mod))
        return out
    src = node.child_by_field_name("source")
    if src is None:
        return out
    mod = _module(_string(src), folder)
    if node.type == "export_statement":
        return _reexports(node, mod, line)
    clause = next((c for c in node.named_children if c.type == "import_clause"), None)
    if clause is None:
        return out
    for c in clause.named_children:
        if c.type == "identifier":  # default import: the module (its default export, by the name given)
            out.append(Ref("imports", _text(c), line, mod))
        elif c.type == "namespace_import":
            ident = next((i for i in c.named_children if i.type == "identifier"), None)
            if ident is not None:
                out.append(Ref("imports", _text(ident), line, mod))
        elif c.type == "named_imports":
            for spec in c.named_children:
                if spec.type != "import_specifier":
                    continue
                name, alias = spec.child_by_field_name("name"), spec.child_by_field_name("alias")
                out.append(Ref("imports", _text(alias or name), line, f"{mod}/{_text(name)}"))
    return out


def _reexports(node: Any, mod: str, line: int) -> list[Ref]:
    """``export * from './m'`` (every name of m, as a star import), ``export * as ns from './m'`` and
    ``export {a, b as c} from './m'``: the names a barrel file (``index.ts``) passes on, which the resolver
    follows from an import of the barrel to the module defining them."""
    out: list[Ref] = []
    if not any(c.type in ("namespace_export", "export_clause") for c in node.named_children):
        return [Ref("imports", "*", line, mod)]
    for c in node.named_children:
        if c.type == "namespace_export":
            ident = next((i for i in c.named_children if i.type == "identifier"), None)
            if ident is not None:
                out.append(Ref("imports", _text(ident), line, mod))
        elif c.type == "export_clause":
            for spec in c.named_children:
                name, alias = spec.child_by_field_name("name"), spec.child_by_field_name("alias")
                if spec.type != "export_specifier" or name is None:
                    continue
                if _text(name) == "default":  # ``export {default as X}``: the module, as a default import
                    out.append(Ref("imports", _text(alias or name), line, mod))
                else:
                    out.append(Ref("imports", _text(alias or name), line, f"{mod}/{_text(name)}"))
    return out


def _require(node: Any, folder: str) -> list[Ref]:
    """``const x = require('./m')`` / ``const {a, b} = require('./m')``."""
    args = node.parent.child_by_field_name("arguments") if node.parent is not None else None
    first = args.named_children[0] if args is not None and args.named_children else None
    decl = node.parent.parent if node.parent is not None else None
    if first is None or first.type != "string" or decl is None or decl.type != "variable_declarator":
        return []
    mod = _module(_string(first), folder)
    target = decl.child_by_field_name("name")
    line = node.start_point[0] + 1
    if target is None:
        return []
    if target.type == "identifier":
        return [Ref("imports", _text(target), line, mod)]
    return [Ref("imports", _text(p), line, f"{mod}/{_text(p)}") for p in target.named_children
            if p.type == "shorthand_property_identifier_pattern"]


def treesitter_refs(lang: str, language: Any, root: Any, path: str) -> list[Ref]:
    query = _query(lang, language)
    if query is None:
        return []
    import tree_sitter

    folder = posixpath.dirname(path.replace("\\", "/"))
    types: FileTypes | None = None
    out: list[Ref] = []
    if lang == "go":  # result and field types, for the package's other files
        types = FileTypes(lang, root)
        out += [Ref(rel, ty, line, of) for rel, ty, line, of in types.stated]
    captures = tree_sitter.QueryCursor(query).captures(root)
    for cap, nodes in captures.items():
        for node in nodes:
            line = node.start_point[0] + 1
            if cap == "import":
                out += _imports(lang, node, folder)
                continue
            name = _dotted(node)
            if cap == "call" and lang in _TYPED and node.type in ("selector_expression", "member_expression"):
                types = types or FileTypes(lang, root)
                typed = types.method(node)  # ``r.NewRoute().Path`` too, which has no dotted name
                if typed:
                    out.append(Ref("calls", TYPED + typed, line))
                    continue
            if not name:
                continue
            if cap == "call":
                if name == "require" and lang in ("javascript", "typescript", "tsx"):
                    out += _require(node, folder)
                    continue
                out.append(Ref("calls", _concrete(name, node), line))
            elif cap == "inherits":
                out.append(Ref("inherits", name.replace("::", "."), line))
            elif cap == "type":
                if node.parent is not None and node.parent.type in ("nested_type_identifier", "qualified_type"):
                    continue  # the whole ``ns.T`` is captured too
                out.append(Ref("uses-type", name, line))
    out.sort(key=lambda r: r.line)
    return out
