"""Python by symbol, with the stdlib ``ast`` (no parser download, no API key).

Chunks tile the file (every line in exactly one chunk, in order):

* ``module_header`` — docstring, imports and assignments before the first ``def``/``class``;
* ``function`` / ``class`` — each top-level definition with its decorators and the comment block right
  above it;
* ``statements`` — top-level code between or after definitions (``if __name__ == "__main__":`` ...);
* a class longer than ``class_split_lines`` becomes a ``class`` header chunk (signature, docstring,
  attributes) followed by one ``method`` chunk per method (nested classes too) and ``class_body`` chunks
  for statements between them.

Blank lines after a chunk stay with it.  A file that does not parse falls back to 200-line windows.
"""

from __future__ import annotations

import ast
import warnings
from dataclasses import dataclass, replace

from memtree_core.types import Chunk
from memtree_plugins.chunkers.python_refs import python_refs
from memtree_plugins.lib.code_refs import attach
from memtree_plugins.lib.lines import crop, make_chunk, split_lines
from memtree_plugins.lib.window import WINDOW_LINES, window_chunks

CLASS_SPLIT_LINES = 80
_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_MAX_LISTED_MEMBERS = 15


@dataclass
class _Piece:
    start: int
    end: int
    kind: str
    symbol: str | None
    outline: str
    members: tuple[str, ...] = ()
    name: str | None = None
    parent: str | None = None  # the enclosing class of a method (or class body) chunk


def _first_doc_line(node: ast.AST) -> str:
    try:
        doc = ast.get_docstring(node, clean=True)  # type: ignore[arg-type]
    except TypeError:
        return ""
    if not doc:
        return ""
    return next((ln.strip() for ln in doc.splitlines() if ln.strip()), "")


def _unparse(node: ast.AST | None) -> str:
    if node is None:
        return ""
    try:
        return ast.unparse(node)
    except Exception:  # unparse of exotic nodes on older Pythons; the outline is best-effort
        return "…"


def _signature(node: ast.AST) -> str:
    if isinstance(node, ast.ClassDef):
        bases = [_unparse(b) for b in node.bases] + [_unparse(k) for k in node.keywords]
        return crop(f"class {node.name}({', '.join(bases)}):" if bases else f"class {node.name}:")
    assert isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
    prefix = "async def" if isinstance(node, ast.AsyncFunctionDef) else "def"
    ret = f" -> {_unparse(node.returns)}" if node.returns is not None else ""
    return crop(f"{prefix} {node.name}({_unparse(node.args)}){ret}:", 240)


def _decorators(node: ast.AST) -> list[str]:
    return [crop("@" + _unparse(d)) for d in getattr(node, "decorator_list", [])]


def _def_outline(node: ast.AST, indent: str = "", context: str | None = None, members: bool = True) -> str:
    out = []
    if context:
        out.append(context)
    out += [indent + d for d in _decorators(node)]
    out.append(indent + _signature(node))
    doc = _first_doc_line(node)
    if doc:
        out.append(f"{indent}    \"\"\"{crop(doc, 140)}\"\"\"")
    if members and isinstance(node, ast.ClassDef):
        defs = [m for m in node.body if isinstance(m, _DEFS)]
        for m in defs[:_MAX_LISTED_MEMBERS]:
            out.append(f"{indent}    {_signature(m)}")
        if len(defs) > _MAX_LISTED_MEMBERS:
            out.append(f"{indent}    … {len(defs) - _MAX_LISTED_MEMBERS} more members")
    return "\n".join(out)


def _header_outline(stmts: list[ast.stmt], module: ast.Module | None) -> str:
    out: list[str] = []
    if module is not None:
        doc = _first_doc_line(module)
        if doc:
            out.append(f'"""{crop(doc, 140)}"""')
    imports: list[str] = []
    names: list[str] = []
    for s in stmts:
        if isinstance(s, ast.Import):
            imports += [a.name for a in s.names]
        elif isinstance(s, ast.ImportFrom):
            imports.append(("." * s.level) + (s.module or ""))
        elif isinstance(s, ast.Assign | ast.AnnAssign | ast.AugAssign):
            targets = s.targets if isinstance(s, ast.Assign) else [s.target]
            names += [_unparse(t) for t in targets]
    if imports:
        out.append(crop("imports: " + ", ".join(dict.fromkeys(imports))))
    if names:
        out.append(crop("defines: " + ", ".join(dict.fromkeys(names))))
    if not out:
        out = _statements_outline(stmts).splitlines()
    return "\n".join(out)


def _statements_outline(stmts: list[ast.stmt], lines: list[str] | None = None) -> str:
    if lines is None:
        return ""
    heads = [crop(lines[s.lineno - 1].strip(), 120) for s in stmts[:5]]
    if len(stmts) > 5:
        heads.append(f"… {len(stmts) - 5} more statements")
    return "\n".join(heads)


def _members(node: ast.AST, prefix: str) -> tuple[str, ...]:
    """Qualified names of the definitions inside a class kept as one chunk (searchable by them)."""
    if not isinstance(node, ast.ClassDef):
        return ()
    out: list[str] = []
    for m in node.body:
        if isinstance(m, _DEFS):
            out.append(f"{prefix}.{m.name}")
            out += _members(m, f"{prefix}.{m.name}")
    return tuple(out)


def _nested_defs(stmts: list[ast.stmt]) -> tuple[str, ...]:
    """Names of the functions and classes a run of module statements defines inside ``if``/``try``/``with``
    blocks (one definition per platform or Python version): the chunk is where they are defined."""
    out: list[str] = []
    todo = [s for s in stmts if not isinstance(s, _DEFS)]
    while todo:
        s = todo.pop(0)
        for field in ("body", "orelse", "finalbody", "handlers"):
            for inner in getattr(s, field, None) or ():
                if isinstance(inner, _DEFS):
                    out.append(inner.name)
                elif isinstance(inner, ast.stmt | ast.excepthandler):
                    todo.append(inner)  # type: ignore[arg-type]
    return tuple(dict.fromkeys(out))


def _start_of(node: ast.stmt) -> int:
    decos = getattr(node, "decorator_list", None) or []
    return min([node.lineno] + [d.lineno for d in decos])


def _pull_back_comments(start: int, floor: int, lines: list[str]) -> int:
    """Extend ``start`` upwards over the comment block directly above it (no blank line between)."""
    while start - 1 > floor and lines[start - 2].lstrip().startswith("#"):
        start -= 1
    return start


def _runs(body: list[ast.stmt]) -> list[tuple[str, list[ast.stmt]]]:
    """Group a body into definitions (one each) and runs of other statements."""
    out: list[tuple[str, list[ast.stmt]]] = []
    for s in body:
        if isinstance(s, _DEFS):
            out.append(("def", [s]))
        elif out and out[-1][0] == "code":
            out[-1][1].append(s)
        else:
            out.append(("code", [s]))
    return out


def _tile(pieces: list[_Piece], lo: int, hi: int) -> list[_Piece]:
    """Stretch pieces so they cover ``lo..hi`` exactly: each ends where the next starts."""
    merged: list[_Piece] = []
    for p in pieces:
        if merged and p.start <= merged[-1].start:
            continue  # shares a line with the previous piece; that piece already holds it
        merged.append(p)
    for i, p in enumerate(merged):
        p.start = lo if i == 0 else p.start
        p.end = merged[i + 1].start - 1 if i + 1 < len(merged) else hi
    return merged


class PythonChunker:
    name = "python"
    priority = 100
    suffixes = (".py", ".pyi", ".pyw")

    def __init__(self, class_split_lines: int = CLASS_SPLIT_LINES, window: int = WINDOW_LINES,
                 references: bool = True) -> None:
        self.class_split_lines = class_split_lines
        self.window = window
        self.references = references  # read each chunk's references (calls, imports, bases, types)

    def matches(self, path: str) -> bool:
        return path.lower().endswith(self.suffixes)

    def availability(self) -> dict[str, str | None]:
        """Python is always chunked by definition (the standard library's ``ast``): for ``memtree info``."""
        return {"python": None}

    def chunk(self, path: str, text: str) -> list[Chunk]:
        lines = split_lines(text)
        if not lines:
            return []
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # SyntaxWarning for odd escapes is not our business
                tree = ast.parse(text, filename=path)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return window_chunks(lines, 1, len(lines), self.window)
        pieces = self._pieces(tree.body, lines, 0, tree, prefix="")
        if not pieces:
            return [make_chunk(lines, 1, len(lines), "module_header", None, _header_outline([], tree))]
        if pieces[0].start > 1 and any(ln.strip() for ln in lines[: pieces[0].start - 1]):
            # Shebang, licence or comments before the first statement: their own header.
            pieces.insert(0, _Piece(1, pieces[0].start - 1, "module_header", None,
                                    crop(next(ln for ln in lines if ln.strip()))))
        tiled = _tile(pieces, 1, len(lines))
        chunks = [replace(make_chunk(lines, p.start, p.end, p.kind, p.symbol, p.outline), name=p.name,
                          parent=p.parent, members=p.members) for p in tiled]
        return attach(chunks, python_refs(path, tree)) if self.references else chunks

    def _pieces(self, body: list[ast.stmt], lines: list[str], floor: int, module: ast.Module | None,
                prefix: str) -> list[_Piece]:
        """Pieces (not yet tiled) for a module body, or a big class body when ``prefix`` is set."""
        pieces: list[_Piece] = []
        seen_def = False
        prev_end = floor
        for what, stmts in _runs(body):
            first, last = stmts[0], stmts[-1]
            start = _pull_back_comments(_start_of(first), prev_end, lines)
            end = last.end_lineno or last.lineno
            if what == "code":
                if prefix:
                    kind, symbol = ("class_body", prefix.rstrip("."))
                    outline = _statements_outline(stmts, lines)
                    pieces.append(_Piece(start, end, kind, symbol, outline, parent=symbol))
                    prev_end = end
                    continue
                elif not seen_def:
                    kind, symbol, outline = "module_header", None, _header_outline(stmts, module)
                else:
                    kind, symbol, outline = "statements", None, _statements_outline(stmts, lines)
                pieces.append(_Piece(start, end, kind, symbol, outline, _nested_defs(stmts)))
            else:
                node = first
                seen_def = True
                symbol = prefix + node.name  # type: ignore[attr-defined]
                if prefix:
                    kind = "class" if isinstance(node, ast.ClassDef) else "method"
                    context = f"class {prefix.rstrip('.')}:"
                    pieces.append(_Piece(start, end, kind, symbol,
                                         _def_outline(node, "    ", context, members=False),
                                         name=node.name, parent=prefix.rstrip(".")))  # type: ignore[attr-defined]
                elif isinstance(node, ast.ClassDef) and end - start + 1 > self.class_split_lines:
                    pieces += self._split_class(node, start, end, lines)
                else:
                    kind = "class" if isinstance(node, ast.ClassDef) else "function"
                    pieces.append(_Piece(start, end, kind, symbol, _def_outline(node), _members(node, symbol),
                                         name=node.name))  # type: ignore[attr-defined]
            prev_end = end
        return pieces

    def _split_class(self, node: ast.ClassDef, start: int, end: int, lines: list[str]) -> list[_Piece]:
        members = self._pieces(node.body, lines, start, None, prefix=node.name + ".")
        header = _Piece(start, end, "class", node.name, _def_outline(node), name=node.name)
        # Attributes and the docstring before the first method belong to the header.
        while members and members[0].kind == "class_body":
            members.pop(0)
        if not members:
            return [header]
        inner = _tile(members, members[0].start, end)
        header.end = inner[0].start - 1
        return [header, *inner]
