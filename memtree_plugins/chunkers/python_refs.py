"""References in Python source, read off the ``ast`` the chunker already parsed (see
:mod:`memtree_plugins.lib.code_refs`).

* ``f(...)`` / ``a.b.f(...)`` and decorators: ``calls`` (``self.f()`` and ``cls.f()`` in a method of class
  ``C`` are ``C.f``; ``super().f()`` is ``super:C.f``, looked up in ``C``'s bases);
* class bases: ``inherits``; names in annotations (string annotations too): ``uses-type``;
* other names read (``isinstance(x, C)``, ``except E``, a function passed as a callback): ``uses``;
* ``import a.b as m`` / ``from .m import x as y``: ``imports`` binding the alias to ``a/b`` or the relative
  module's path from the file's directory;
* what a member or function gives, for calls on its value: ``gives`` naming a class, its ``target`` the
  member spelled ``C.m()`` (a method's return annotation), ``C.p`` (a property's, an attribute's
  annotation or the one class, or path to one, assigned to ``self.p``), ``f()`` (a function's), ``...[]``
  (the element of a ``list[T]``, ``Iterator[T]`` ...) and ``...{}`` (what indexing a ``dict[K, V]`` or a
  list gives).  A call on a value whose type is known that way is named by the path to it: ``x =
  self.fetch(); x.read()`` in class ``C`` is ``C.fetch().read``, ``for p in self.params: p.check()`` is
  ``C.params[].check``, ``self.url.copy()`` is ``C.url.copy``; ``typing.cast(T, v)``, ``with T() as x``
  and ``except T as e`` give a ``T``; resolution walks the path (``docs/architecture.md`` "Code
  references").
"""

from __future__ import annotations

import ast
import builtins
import posixpath

from memtree_plugins.lib.code_refs import PYTHON_TYPE_METHODS, Ref

# Python's own names (``len``, ``isinstance``, ``ValueError``) name nothing of the repository, unless the
# module binds the name itself (defines or imports its own ``open``).
_BUILTINS = frozenset(dir(builtins))
_BUILTIN_METHODS = PYTHON_TYPE_METHODS


def dotted(node: ast.AST) -> str | None:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "super" and parts:
        return "super()." + ".".join(reversed(parts))
    return None


def _annotation(node: ast.AST) -> ast.AST | None:
    """An annotation as one type: a string annotation parsed, ``T | None`` read as ``T``; None when it is not
    one type (``A | B``, a string that is not Python)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        try:
            node = ast.parse(node.value, mode="eval").body
        except SyntaxError:
            return None
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        sides = [n for n in (node.left, node.right) if not (isinstance(n, ast.Constant) and n.value is None)]
        return _annotation(sides[0]) if len(sides) == 1 else None
    return node


def _type_name(node: ast.AST) -> str | None:
    """The class an annotation names: ``T``, ``mod.T``, ``T | None``, ``Optional[T]``, ``"T"``."""
    one = _annotation(node)
    if one is None:
        return None
    node = one
    if isinstance(node, ast.Subscript) and (dotted(node.value) or "").rsplit(".", 1)[-1] == "Optional":
        return _type_name(node.slice)
    name = dotted(node) if isinstance(node, ast.Name | ast.Attribute) else None
    return name if name and name.rsplit(".", 1)[-1][:1].isupper() and name not in _BUILTINS else None


# Containers whose first type argument is what iterating them gives.
_ITERABLES = frozenset({"list", "List", "set", "Set", "frozenset", "FrozenSet", "Sequence", "MutableSequence",
                        "Iterable", "Iterator", "Collection", "AbstractSet", "MutableSet", "Generator",
                        "AsyncIterator", "AsyncIterable", "AsyncGenerator", "deque", "Deque"})


_MAPPINGS = frozenset({"dict", "Dict", "Mapping", "MutableMapping", "OrderedDict", "DefaultDict", "defaultdict"})


def _element_name(node: ast.AST, mapping: bool = False) -> str | None:
    """The class iterating an annotated value gives: ``list[T]``, ``Iterator[T]``, ``Optional[List[T]]``;
    with ``mapping``, the class indexing it gives (``dict[K, V]``: ``V``; a list's element)."""
    node = _annotation(node) or node
    if not isinstance(node, ast.Subscript):
        return None
    base = (dotted(node.value) or "").rsplit(".", 1)[-1]
    if base == "Optional":
        return _element_name(node.slice, mapping)
    if mapping and base in _MAPPINGS and isinstance(node.slice, ast.Tuple) and len(node.slice.elts) == 2:
        return _type_name(node.slice.elts[1])
    if base not in _ITERABLES:
        return None
    first = node.slice.elts[0] if isinstance(node.slice, ast.Tuple) and node.slice.elts else node.slice
    return _type_name(first)


_PROPERTIES = frozenset({"property", "cached_property"})


# Nodes that hold no name: not walked into (every Name has a Load/Store node, every operation an operator).
_LEAVES = (ast.expr_context, ast.operator, ast.unaryop, ast.cmpop, ast.boolop, ast.Constant, ast.alias)


class _Visitor(ast.NodeVisitor):
    _handlers: dict[type, object] = {}

    def visit(self, node: ast.AST) -> None:
        """``NodeVisitor.visit`` with the handler looked up once per node type and leaves skipped (a third of
        the time on real code)."""
        cls = node.__class__
        handler = self._handlers.get(cls)
        if handler is None:
            handler = self._handlers[cls] = getattr(type(self), "visit_" + cls.__name__, _Visitor.generic_visit)
        handler(self, node)  # type: ignore[operator]

    def generic_visit(self, node: ast.AST) -> None:
        for name in node._fields:
            value = getattr(node, name, None)
            if isinstance(value, list):
                for item in value:
                    if isinstance(item, ast.AST) and not isinstance(item, _LEAVES):
                        self.visit(item)
            elif isinstance(value, ast.AST) and not isinstance(value, _LEAVES):
                self.visit(value)

    def __init__(self, path: str) -> None:
        self.out: list[Ref] = []
        self.classes: list[str] = []  # qualified names of the enclosing classes
        self.selves: list[str | None] = []  # the first parameter's name of each enclosing method
        self.locals: list[set[str]] = []  # names bound in each enclosing function (its variables)
        self.types: list[dict[str, str | None]] = []  # a variable's class when the function says it
        self.dir = posixpath.dirname(path.replace("\\", "/"))
        self.builtins = _BUILTINS
        self.depth = 0  # enclosing functions
        # ``self.<attr>`` of each class: the classes assigned to it (None: something else) and where first
        self.attrs: dict[str, tuple[int, set[str | None]]] = {}
        self.declared: dict[str, tuple[int, ast.AST]] = {}  # annotated attributes: (line, annotation)
        self.fixed: list[set[str]] = []  # each function's variables declared with a type (kept as declared)

    def gives(self, key: str, annotation: ast.AST, line: int) -> None:
        """``gives`` refs: what ``key`` (``C.m()``, ``C.p``, ``f()``) gives, and its element."""
        for ops, t in (("", _type_name(annotation)), ("[]", _element_name(annotation)),
                       ("{}", _element_name(annotation, mapping=True))):
            if t:
                self.out.append(Ref("gives", t, line, key + ops))

    def self_name(self) -> str | None:
        """The enclosing method's ``self`` (or ``cls``), if there is one."""
        s = self.selves[-1] if self.selves else None
        return s if s and s != "\0" and self.classes else None

    def type_path(self, node: ast.AST) -> str | None:
        """How a value's class is reached: ``T`` (``T(...)``), ``C.m()`` (``self.m()``), ``C.p``
        (``self.p``), ``f()``, ``T.p`` (a typed variable's attribute); None when not known."""
        if isinstance(node, ast.Await):
            node = node.value
        if isinstance(node, ast.Subscript) and not isinstance(node.slice, ast.Slice):
            inner = self.type_path(node.value)  # ``self.by_name[key]``: what indexing it gives
            return inner + "{}" if inner else None
        if isinstance(node, ast.Call) and (dotted(node.func) or "").rsplit(".", 1)[-1] == "cast" and node.args:
            return _type_name(node.args[0])  # ``typing.cast(T, value)``
        call = isinstance(node, ast.Call)
        name = dotted(node.func) if isinstance(node, ast.Call) else dotted(node)
        if not name or name.startswith("super()"):
            return None
        head, dot, rest = name.partition(".")
        me = self.self_name()
        frame = self.types[-1] if self.types else {}
        if head == me:
            if not rest:
                return None
            path = f"{self.classes[-1]}.{rest}"
        elif head in frame:
            if not frame[head]:
                return None
            path = f"{frame[head]}{dot}{rest}"
        elif self.locals and head in self.locals[-1] or head in self.builtins:
            return None
        elif not call and not dot:
            return None  # a module-level name read: a value, not a class path
        else:
            path = name
        if call:
            return path if name.rsplit(".", 1)[-1][:1].isupper() and "(" not in path else path + "()"
        return path

    def bind(self, name: str, kind: str | None) -> None:
        """A variable of the innermost function holds ``kind`` (a second, different value: unknown)."""
        if name in self.fixed[-1]:
            return  # declared ``x: T`` (a parameter too): another value of it is a T as well
        frame = self.types[-1]
        frame[name] = kind if name not in frame or frame[name] == kind else None

    def self_attr(self, target: ast.AST) -> str | None:
        """``C.x`` for ``self.x`` written in a method of class ``C``."""
        me = self.self_name()
        if me and isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) \
                and target.value.id == me:
            return f"{self.classes[-1]}.{target.attr}"
        return None

    def attr_types(self) -> list[Ref]:
        """``gives`` for the attributes of the file's classes: the annotated type, else the one class
        every assignment gives (``None`` aside)."""
        out: list[Ref] = []
        for key, (line, annotation) in self.declared.items():
            for ops, t in (("", _type_name(annotation)), ("[]", _element_name(annotation)),
                           ("{}", _element_name(annotation, mapping=True))):
                if t:
                    out.append(Ref("gives", t, line, key + ops))
        for key, (line, kinds) in self.attrs.items():
            if key not in self.declared and len(kinds) == 1 and None not in kinds:
                (t,) = kinds
                if t:  # a class, or the path to one (``self.x = self.make()``: ``C.make()``)
                    out.append(Ref("gives", t, line, key))
        return out

    def emit(self, rel: str, name: str | None, node: ast.AST, target: str = "") -> None:
        if not name:
            return
        head, _, rest = name.partition(".")
        if rest and self.classes and self.selves and head == self.selves[-1]:
            name = f"{self.classes[-1]}.{rest}"
        elif head == "super()" and self.classes:
            name = f"super:{self.classes[-1]}.{rest}"
        elif head == "super()":
            return
        self.out.append(Ref(rel, name, node.lineno, target))  # type: ignore[attr-defined]

    def unknown(self, attr: str, node: ast.AST) -> None:
        if attr not in _BUILTIN_METHODS:
            self.out.append(Ref("calls", "." + attr, node.lineno))  # type: ignore[attr-defined]

    # -- definitions --------------------------------------------------------------------------------
    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        for d in node.decorator_list:
            self.call_like(d)
        for b in node.bases:
            self.emit("inherits", dotted(b), b)
            self.visit_subscripts(b)
        for k in node.keywords:
            self.visit(k.value)
        self.classes.append(f"{self.classes[-1]}.{node.name}" if self.classes else node.name)
        self.selves.append(None)
        for s in node.body:
            if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name):
                self.declared[f"{self.classes[-1]}.{s.target.id}"] = (s.lineno, s.annotation)
            self.visit(s)
        self.selves.pop()
        self.classes.pop()

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        for d in node.decorator_list:
            self.call_like(d)
        args = node.args
        for a in [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]:
            if a is not None and a.annotation is not None:
                self.annotation(a.annotation)
        for default in [*args.defaults, *(d for d in args.kw_defaults if d is not None)]:
            self.visit(default)
        if node.returns is not None:
            self.annotation(node.returns)
        first = (args.posonlyargs + args.args)[:1]
        in_class = bool(self.selves) and self.selves[-1] is None and bool(self.classes)
        bound = {a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]
                 if a is not None}
        if node.returns is not None and (in_class or not self.depth):
            decos = {(dotted(d) or "").rsplit(".", 1)[-1] for d in node.decorator_list}
            key = f"{self.classes[-1]}.{node.name}" if in_class else node.name
            self.gives(key if decos & _PROPERTIES and in_class else key + "()", node.returns, node.lineno)
        # A function nested in a method sees the method's ``self`` (unless it binds that name itself).
        outer = self.self_name() if not in_class else None
        self.selves.append(first[0].arg if in_class and first else
                           outer if outer and outer not in bound else "\0")
        self.depth += 1
        types = {a.arg: t for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]
                 if a.annotation is not None and (t := _type_name(a.annotation))}
        self.locals.append(bound)
        self.types.append(types)
        self.fixed.append(set(types))
        start = len(self.out)
        for s in node.body:
            self.visit(s)
        self.depth -= 1
        self.fixed.pop()
        self.types.pop()
        self.locals.pop()
        self.selves.pop()
        bound.discard(first[0].arg if in_class and first else "")
        self._drop_locals(start, bound, types)

    def _drop_locals(self, start: int, bound: set[str], types: dict[str, str | None]) -> None:
        """The function's references whose first name is one of its variables (bound anywhere in it, as
        Python scopes them) name no definition: dropped; a method called on one is kept as its type's
        (``x.m()`` with ``x: T`` or ``x = T(...)``: ``T.m``), else by its name alone."""
        if not bound:
            return
        kept: list[Ref] = []
        for r in self.out[start:]:
            head, dot, rest = r.name.partition(".")
            if head not in bound or r.rel == "imports":
                kept.append(r)
            elif dot and r.rel == "calls" and types.get(head):
                kept.append(r._replace(name=f"{types[head]}.{rest}"))
            elif dot and r.rel == "calls" and r.name.rsplit(".", 1)[-1] not in _BUILTIN_METHODS:
                kept.append(r._replace(name="." + r.name.rsplit(".", 1)[-1]))
        self.out[start:] = kept

    def visit_Assign(self, node: ast.Assign) -> None:
        """``x = T(...)``, ``x = self.m()``, ``x = f()``, ``x = self.p``: the path to ``x``'s class in this
        function (a second, different assignment makes it unknown); ``self.x = ...`` in a method: what the
        class's attribute holds."""
        if self.types and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            self.bind(node.targets[0].id, self.type_path(node.value))
        elif len(node.targets) == 1 and (key := self.self_attr(node.targets[0])):
            if not (isinstance(node.value, ast.Constant) and node.value.value is None):
                line, kinds = self.attrs.setdefault(key, (node.lineno, set()))
                kinds.add(self.type_path(node.value))
        self.generic_visit(node)

    def visit_For(self, node: ast.For | ast.AsyncFor) -> None:
        """``for x in self.items``: ``x`` is an element of what ``self.items`` holds."""
        if self.types and isinstance(node.target, ast.Name):
            path = self.type_path(node.iter)
            self.bind(node.target.id, path + "[]" if path else None)
        self.generic_visit(node)

    visit_AsyncFor = visit_For  # type: ignore[assignment]

    def visit_With(self, node: ast.With | ast.AsyncWith) -> None:
        """``with T(...) as x``: ``x`` is a ``T`` (a class's ``__enter__`` gives itself, as a rule)."""
        for item in node.items:
            v = item.optional_vars
            if self.types and isinstance(v, ast.Name) and isinstance(item.context_expr, ast.Call):
                path = self.type_path(item.context_expr)
                # ``with T() as x``: a T; ``with self.stream() as x``: what a ``@contextmanager``
                # generator annotated ``Iterator[T]`` yields (a method giving a plain class says no ``[]``)
                self.bind(v.id, path + "[]" if path and path.endswith(")") else path)
        self.generic_visit(node)

    def visit_ExceptHandler(self, node: ast.ExceptHandler) -> None:
        """``except E as e``: ``e`` is an ``E`` in the handler (and unbound after it, so each handler of a
        function names its own): a method called on it is ``E``'s, else known by its name alone."""
        start = len(self.out)
        self.generic_visit(node)
        if not (self.types and node.name):
            return
        kind = dotted(node.type) if node.type is not None else None
        kept: list[Ref] = []
        for r in self.out[start:]:
            head, dot, rest = r.name.partition(".")
            if head != node.name or r.rel == "imports":
                kept.append(r)
            elif dot and r.rel == "calls" and kind:
                kept.append(r._replace(name=f"{kind}.{rest}"))
            elif dot and r.rel == "calls" and r.name.rsplit(".", 1)[-1] not in _BUILTIN_METHODS:
                kept.append(r._replace(name="." + r.name.rsplit(".", 1)[-1]))
        self.out[start:] = kept

    visit_AsyncWith = visit_With  # type: ignore[assignment]

    visit_AsyncFunctionDef = visit_FunctionDef  # type: ignore[assignment]

    def visit_Lambda(self, node: ast.Lambda) -> None:
        self.visit(node.body)

    # -- uses ---------------------------------------------------------------------------------------
    def call_like(self, node: ast.AST) -> None:
        """A decorator: ``@d`` and ``@d(...)`` both call ``d``."""
        if isinstance(node, ast.Call):
            self.visit(node)
        else:
            self.emit("calls", dotted(node), node)

    def visit_Call(self, node: ast.Call) -> None:
        name = dotted(node.func)
        if name is not None and name in self.builtins:
            pass  # len(), isinstance(), str(): Python's own
        elif name is not None:
            self.emit("calls", name, node.func)
        else:
            if isinstance(node.func, ast.Attribute):
                # ``self.fetch().read()``, ``self.by_name[k].close()``: the path to the value's class, walked
                # when resolved; ``make().run()`` otherwise: only the method's name is known
                path = self.type_path(node.func.value)
                if path and path[-1] in ")]}":
                    self.out.append(Ref("calls", f"{path}.{node.func.attr}", node.func.lineno))
                else:
                    self.unknown(node.func.attr, node.func)
            self.visit(node.func)
        for a in node.args:
            self.visit(a)
        for k in node.keywords:
            self.visit(k.value)

    def visit_Name(self, node: ast.Name) -> None:
        if isinstance(node.ctx, ast.Load):
            if node.id not in self.builtins:
                self.emit("uses", node.id, node)
        elif self.locals:
            self.locals[-1].add(node.id)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        name = dotted(node)
        if name is not None and isinstance(node.ctx, ast.Load):
            head = name.split(".", 1)[0]
            if self.selves and head == self.selves[-1]:
                self.emit("uses", name, node)  # self.helper passed on, not called
                return
        self.visit(node.value)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if self.types and isinstance(node.target, ast.Name):
            self.types[-1][node.target.id] = _type_name(node.annotation)
            if self.types[-1][node.target.id]:
                self.fixed[-1].add(node.target.id)
        elif key := self.self_attr(node.target):
            self.declared.setdefault(key, (node.lineno, node.annotation))
        self.annotation(node.annotation)
        if node.value is not None:
            self.visit(node.value)

    def annotation(self, node: ast.AST) -> None:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            try:
                inner = ast.parse(node.value, mode="eval").body
            except SyntaxError:
                return
            for n in ast.walk(inner):
                if isinstance(n, ast.Name | ast.Attribute):
                    name = dotted(n)
                    if name:
                        self.out.append(Ref("uses-type", name, node.lineno))
            return
        for n in ast.walk(node):
            if isinstance(n, ast.Attribute) and dotted(n):
                self.emit("uses-type", dotted(n), n)
            elif isinstance(n, ast.Name) and n.id not in self.builtins:
                self.emit("uses-type", n.id, n)
            elif isinstance(n, ast.Constant) and isinstance(n.value, str) and n is not node:
                self.annotation(n)

    def visit_subscripts(self, node: ast.AST) -> None:
        if isinstance(node, ast.Subscript):
            self.annotation(node.slice)

    def visit_Import(self, node: ast.Import) -> None:
        for a in node.names:
            if a.asname:
                self.emit("imports", a.asname, node, a.name.replace(".", "/"))
            else:
                top = a.name.split(".", 1)[0]
                self.emit("imports", top, node, top)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        mod = (node.module or "").replace(".", "/")
        if node.level:
            base = self.dir
            for _ in range(node.level - 1):
                base = posixpath.dirname(base)
            mod = posixpath.join(base, mod) if mod else base
        for a in node.names:
            if a.name == "*":
                self.emit("imports", "*", node, mod)
            else:
                self.emit("imports", a.asname or a.name, node, f"{mod}/{a.name}" if mod else a.name)


def python_refs(path: str, tree: ast.Module) -> list[Ref]:
    v = _Visitor(path)
    bound: set[str] = set()
    for stmt in tree.body:
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            bound.add(stmt.name)
        elif isinstance(stmt, ast.Import | ast.ImportFrom):
            bound.update((a.asname or a.name).split(".", 1)[0] for a in stmt.names)
        elif isinstance(stmt, ast.Assign):
            bound.update(t.id for t in stmt.targets if isinstance(t, ast.Name))
    if bound & _BUILTINS:
        v.builtins = _BUILTINS - bound
    try:
        v.visit(tree)
    except Exception:  # absurdly nested generated code, a node this Python's ast has new: what was read so far
        pass
    return v.out + v.attr_types()
