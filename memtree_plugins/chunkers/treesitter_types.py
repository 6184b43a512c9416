"""The declared type of a receiver in Go and TypeScript, read off one file's syntax tree, so that
``r.NewRoute().Path()`` or ``adm.defineProperty_()`` names its method as ``Route.Path`` /
``ObservableObjectAdministration.defineProperty_`` rather than by its last name only (which a name defined
on two types leaves unresolved, and a library's method of the same name would mislead).

Only what the file states is used: a parameter's or variable's written type, a composite literal or
``new T``, a type assertion, a struct field's type, and the result type of a function or method declared in
the same file.  Anything else is unknown and the caller keeps the name as written; a type is never guessed.
"""

from __future__ import annotations

from typing import Any

_MAX_DEPTH = 6


def _text(node: Any) -> str:
    return node.text.decode("utf-8", "replace") if node is not None and node.text is not None else ""


def _key(node: Any) -> tuple[int, int]:
    return node.start_byte, node.end_byte


class FileTypes:
    """Types declared in one Go or TypeScript file, and the typed variables of its functions."""

    def __init__(self, lang: str, root: Any) -> None:
        self.go = lang == "go"
        self.fields: dict[str, dict[str, str]] = {}  # type -> field -> type
        self.returns: dict[str, str] = {}  # ``F`` / ``T.m`` -> result type
        self.scopes: dict[tuple[int, int], dict[str, list[tuple[int, Any, Any]]]] = {}
        # Go: what the file states for the other files of its package, (rel, type, line, of what): a result
        # type (``returns``, of ``T.m`` / ``F``) and a struct field's type (``has``, of ``T.f``)
        self.stated: list[tuple[str, str, int, str]] = []
        self._declarations(root)

    # -- the file's declarations ---------------------------------------------------------------------
    def type_name(self, node: Any) -> str | None:
        """A named type as the resolver reads it (``T``, ``pkg.T``), pointers and type arguments left out."""
        if node is None:
            return None
        t = node.type
        if t in ("type_identifier", "identifier"):
            return _text(node)
        if t in ("qualified_type", "nested_type_identifier"):
            return _text(node).replace(" ", "")
        if t in ("pointer_type", "type_annotation", "parenthesized_type"):
            inner = [c for c in node.named_children if c.type != "comment"]
            return self.type_name(inner[0]) if len(inner) == 1 else None
        if t == "generic_type":
            base = node.child_by_field_name("type") or node.child_by_field_name("name") or (
                node.named_children[0] if node.named_children else None)
            return self.type_name(base)
        if t in ("slice_type", "array_type"):  # ``[]*T`` / ``T[]``: a collection, ``[]T`` for its elements
            elem = node.child_by_field_name("element") or (node.named_children[0] if node.named_children else None)
            got = self.type_name(elem)
            return f"[]{got}" if got else None
        if t == "map_type":
            got = self.type_name(node.child_by_field_name("value"))
            return f"[]{got}" if got else None
        if t == "parameter_list" and self.go:  # ``(*T, error)``: the first result
            first = next((c for c in node.named_children if c.type == "parameter_declaration"), None)
            return self.type_name(first.child_by_field_name("type")) if first is not None else None
        return None

    def _declarations(self, root: Any) -> None:
        stack = [root]
        while stack:
            node = stack.pop()
            t = node.type
            if t == "type_spec":  # Go
                name, body = node.child_by_field_name("name"), node.child_by_field_name("type")
                if name is not None and body is not None and body.type == "struct_type":
                    self._go_fields(_text(name), body)
            elif t == "function_declaration" and self.go:
                self._result(_text(node.child_by_field_name("name")), node.child_by_field_name("result"), node)
            elif t == "method_declaration" and self.go:
                recv = self.receiver(node)
                if recv is not None:
                    self._result(f"{recv[1]}.{_text(node.child_by_field_name('name'))}",
                                 node.child_by_field_name("result"), node)
            elif t in ("function_declaration", "generator_function_declaration"):  # TypeScript
                self._result(_text(node.child_by_field_name("name")), node.child_by_field_name("return_type"))
            elif t in ("class_declaration", "abstract_class_declaration"):
                self._ts_class(node)
            stack.extend(c for c in node.named_children if c.type not in ("block", "statement_block"))

    def _result(self, name: str, result: Any, decl: Any = None) -> None:
        got = self.type_name(result)
        if name and got:
            self.returns[name] = got
            if decl is not None and not got.startswith("[]"):
                self.stated.append(("returns", got, decl.start_point[0] + 1, name))

    def _go_fields(self, owner: str, struct: Any) -> None:
        out = self.fields.setdefault(owner, {})
        for fields in struct.named_children:
            for f in fields.named_children if fields.type == "field_declaration_list" else ():
                if f.type != "field_declaration":
                    continue
                ty = self.type_name(f.child_by_field_name("type"))
                names = [c for c in f.children_by_field_name("name")]
                if ty is None:
                    continue
                line = f.start_point[0] + 1
                if not names:  # an embedded struct: its field by the type's own name
                    out[ty.rsplit(".", 1)[-1]] = ty
                    self.stated.append(("has", ty, line, f"{owner}.{ty.rsplit('.', 1)[-1]}"))
                for n in names:
                    out[_text(n)] = ty
                    if not ty.startswith("[]"):
                        self.stated.append(("has", ty, line, f"{owner}.{_text(n)}"))

    def _ts_class(self, node: Any) -> None:
        name, body = node.child_by_field_name("name"), node.child_by_field_name("body")
        if name is None or body is None:
            return
        owner = _text(name)
        out = self.fields.setdefault(owner, {})
        for m in body.named_children:
            if m.type in ("public_field_definition", "property_signature"):
                prop = m.child_by_field_name("name")
                ty = self.type_name(m.child_by_field_name("type"))
                value = m.child_by_field_name("value")
                if ty is None and value is not None and value.type == "new_expression":
                    ty = self.type_name(value.child_by_field_name("constructor"))
                if prop is not None and ty is not None:
                    out[_text(prop)] = ty
            elif m.type in ("method_definition", "method_signature"):
                self._result(f"{owner}.{_text(m.child_by_field_name('name'))}", m.child_by_field_name("return_type"))
                if _text(m.child_by_field_name("name")) == "constructor":  # ``constructor(private x: T)``
                    for p in (m.child_by_field_name("parameters") or m).named_children:
                        if any(c.type == "accessibility_modifier" for c in p.children):
                            pat, ty = p.child_by_field_name("pattern"), self.type_name(p.child_by_field_name("type"))
                            if pat is not None and ty is not None:
                                out[_text(pat)] = ty

    def receiver(self, method: Any) -> tuple[str, str] | None:
        """A Go method's (receiver variable, receiver type)."""
        recv = method.child_by_field_name("receiver")
        for p in recv.named_children if recv is not None else ():
            var, ty = p.child_by_field_name("name"), self.type_name(p.child_by_field_name("type"))
            if ty is not None:
                return (_text(var) if var is not None else ""), ty
        return None

    # -- a function's variables ----------------------------------------------------------------------
    def _scope(self, fn: Any) -> dict[str, list[tuple[int, Any, Any]]]:
        """(position, written type, value) of each parameter and variable declared in ``fn``, by name."""
        key = _key(fn)
        if key in self.scopes:
            return self.scopes[key]
        out: list[tuple[int, str, Any, Any]] = []
        params = fn.child_by_field_name("parameters")
        for p in params.named_children if params is not None else ():
            if self.go and p.type == "parameter_declaration":
                out += [(p.start_byte, _text(n), p.child_by_field_name("type"), None)
                        for n in p.children_by_field_name("name")]
            elif self.go and p.type == "variadic_parameter_declaration":  # ``opts ...T``: a []T
                elem = self.type_name(p.child_by_field_name("type"))
                out += [(p.start_byte, _text(n), None, f"[]{elem}")
                        for n in p.children_by_field_name("name") if elem]
            elif p.type in ("required_parameter", "optional_parameter"):
                pat = p.child_by_field_name("pattern")
                if pat is not None and pat.type == "identifier":
                    out.append((p.start_byte, _text(pat), p.child_by_field_name("type"), None))
        if self.go and fn.type == "method_declaration":
            recv = self.receiver(fn)
            if recv is not None and recv[0]:
                out.append((fn.start_byte, recv[0], None, recv[1]))
        body = fn.child_by_field_name("body")
        stack = [body] if body is not None else []
        while stack:
            node = stack.pop()
            t = node.type
            if t in ("func_literal", "function_expression", "arrow_function", "function_declaration",
                     "method_definition", "class_declaration"):
                continue  # their own scope
            if t == "var_spec" or t == "const_spec":
                names = node.children_by_field_name("name")
                ty = node.child_by_field_name("type")
                values = node.child_by_field_name("value")
                vals = values.named_children if values is not None else []
                for i, n in enumerate(names):
                    out.append((node.start_byte, _text(n), ty, vals[i] if i < len(vals) else None))
            elif t == "short_var_declaration":
                left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
                names = left.named_children if left is not None else []
                vals = right.named_children if right is not None else []
                for i, n in enumerate(names):
                    if n.type == "identifier" and (i < len(vals) or (i == 0 and vals)):
                        out.append((node.start_byte, _text(n), None, vals[i] if i < len(vals) else vals[0]))
            elif t == "range_clause":  # Go ``for k, v := range xs``: v an element (k, of a channel)
                names = (node.child_by_field_name("left") or node).named_children
                right = node.child_by_field_name("right")
                pick = names[1] if len(names) > 1 else None
                if pick is not None and pick.type == "identifier" and right is not None:
                    out.append((node.start_byte, _text(pick), None, ("element", right)))
            elif t == "for_in_statement" and _text(node).split("(", 1)[-1].lstrip().split(" ")[0] in (
                    "const", "let", "var"):  # TypeScript ``for (const x of xs)``
                left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
                if left is not None and left.type == "identifier" and right is not None and any(
                        c.type == "of" for c in node.children):
                    out.append((node.start_byte, _text(left), None, ("element", right)))
            elif t == "variable_declarator":  # TypeScript ``const x: T = …`` / ``let x = new T()``
                name = node.child_by_field_name("name")
                if name is not None and name.type == "identifier":
                    out.append((node.start_byte, _text(name), node.child_by_field_name("type"),
                                node.child_by_field_name("value")))
            stack.extend(node.named_children)
        by_name: dict[str, list[tuple[int, Any, Any]]] = {}
        for pos, name, ty, value in sorted(out, key=lambda x: x[0]):
            by_name.setdefault(name, []).append((pos, ty, value))
        self.scopes[key] = by_name
        return by_name

    def variable(self, name: str, at: Any, depth: int) -> str | None:
        """The type of variable ``name`` where ``at`` uses it: its latest declaration before, innermost
        function first."""
        fn = at.parent
        while fn is not None:
            if fn.type in ("function_declaration", "method_declaration", "func_literal", "function_expression",
                           "arrow_function", "method_definition", "generator_function_declaration"):
                found = None
                for pos, ty, value in self._scope(fn).get(name, ()):
                    if pos <= at.start_byte:
                        found = (ty, value)
                if found is not None:
                    ty, value = found
                    if isinstance(value, str):
                        return value
                    if isinstance(value, tuple):
                        return self.element(self.of(value[1], depth + 1))
                    written = self.type_name(ty)
                    if written is not None:
                        return written
                    return self.of(value, depth + 1) if value is not None else None
            fn = fn.parent
        return None

    @staticmethod
    def element(collection: str | None) -> str | None:
        return collection[2:] if collection and collection.startswith("[]") else None

    # -- an expression's type ------------------------------------------------------------------------
    def of(self, node: Any, depth: int = 0) -> str | None:
        """The named type of expression ``node``, or None when the file does not say."""
        if node is None or depth > _MAX_DEPTH:
            return None
        t = node.type
        if t == "identifier":
            return self.variable(_text(node), node, depth)
        if t in ("parenthesized_expression", "non_null_expression", "await_expression"):
            inner = [c for c in node.named_children if c.type != "comment"]
            return self.of(inner[0], depth + 1) if inner else None
        if t == "unary_expression" and self.go and _text(node)[:1] == "&":
            return self.of(node.child_by_field_name("operand"), depth + 1)
        if t in ("index_expression", "subscript_expression"):  # ``xs[i]``: an element
            return self.element(self.of(node.child_by_field_name("operand") or node.child_by_field_name("object"),
                                        depth + 1))
        if t == "composite_literal":
            return self.type_name(node.child_by_field_name("type"))
        if t == "type_assertion_expression":
            return self.type_name(node.child_by_field_name("type"))
        if t in ("as_expression", "satisfies_expression"):
            kids = node.named_children
            return self.type_name(kids[-1]) if len(kids) == 2 else None
        if t == "new_expression":
            return self.type_name(node.child_by_field_name("constructor"))
        if t in ("selector_expression", "member_expression"):
            obj = node.child_by_field_name("operand") or node.child_by_field_name("object")
            prop = node.child_by_field_name("field") or node.child_by_field_name("property")
            owner = self.this_type(obj) if obj is not None and obj.type == "this" else self.of(obj, depth + 1)
            if owner is None or prop is None:
                return None
            return self.fields.get(owner, {}).get(_text(prop)) or self._later(owner, _text(prop))
        if t == "call_expression":
            fn = node.child_by_field_name("function")
            args = node.child_by_field_name("arguments")
            if fn is None:
                return None
            if fn.type == "identifier":
                if self.go and _text(fn) == "new" and args is not None and args.named_children:
                    return self.type_name(args.named_children[0])
                return self.returns.get(_text(fn))
            callee = self.method(fn, depth + 1)
            if not callee:
                return None
            owner, _, name = callee.rpartition(".")
            return self.returns.get(callee) or self._later(owner, name + "()")
        return None

    def _later(self, owner: str, step: str) -> str | None:
        """Go: a field or method result the package's other files state, as a step for the resolver
        (``Route@regexp``, ``Route@Path()``); a type of another package, a collection: unknown."""
        if not self.go or "." in owner.split("@", 1)[0] or owner.startswith("[]") or owner.count("@") >= 3:
            return None
        return f"{owner}@{step}"

    def this_type(self, node: Any) -> str | None:
        """``this``'s type: the enclosing class, or a function's declared ``this: T`` parameter."""
        n = node.parent
        while n is not None:
            if n.type in ("class_declaration", "abstract_class_declaration", "class"):
                name = n.child_by_field_name("name")
                return _text(name) if name is not None else None
            if n.type in ("function_declaration", "function_expression", "generator_function_declaration"):
                params = n.child_by_field_name("parameters")
                for p in params.named_children if params is not None else ():
                    pat = p.child_by_field_name("pattern")
                    if pat is not None and pat.type == "this":
                        return self.type_name(p.child_by_field_name("type"))
                return None  # a plain function's ``this`` is its caller's
            n = n.parent
        return None

    def method(self, callee: Any, depth: int = 0) -> str | None:
        """``T.m`` for a call's callee ``x.m`` whose receiver's type the file states, else None."""
        if callee.type not in ("selector_expression", "member_expression"):
            return None
        obj = callee.child_by_field_name("operand") or callee.child_by_field_name("object")
        prop = callee.child_by_field_name("field") or callee.child_by_field_name("property")
        if obj is None or prop is None:
            return None
        owner = self.this_type(obj) if obj.type == "this" else self.of(obj, depth)
        return f"{owner}.{_text(prop)}" if owner and not owner.startswith("[]") else None
