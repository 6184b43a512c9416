"""Developer question sets over real libraries: loading, fetching the pinned source, and the validator.

Each ``<set>.json`` beside this file holds questions a developer would ask in their own words about one
library nobody here wrote, with the definitions that answer them (``[path, symbol]``, found by reading the
code).  The library is pinned (registry, package, version and the archive's sha256) and fetched at eval time
into a cache outside the repository.  ``validate`` checks a set against that source: every target resolves
to a definition (Python by ``ast``; JavaScript and Go by tree-sitter, walked here rather than through
memtree's chunkers, whose output is what the runner scores), and no question names its target's identifier
or copies a sentence of its docstring or comments.  The sets are frozen (eval/questions/README.md): tune
memtree on them, never them on memtree.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
MIN_QUESTIONS = 30
COPY_WORDS = 5  # a run of this many words shared with the target's own docstring or comments is a copy
PHRASE_WORDS = 3  # an identifier of this many words or more, written out with spaces, still names it


def set_names() -> list[str]:
    return sorted(p.stem for p in HERE.glob("*.json"))


def load(name: str) -> dict[str, Any]:
    path = HERE / f"{name}.json"
    if not path.is_file():
        raise ValueError(f"no question set {name!r}: choose one of {', '.join(set_names())}")
    return json.loads(path.read_text(encoding="utf-8"))


# ---- the pinned source ------------------------------------------------------------------------------------

def cache_dir() -> Path:
    from eval.redaction_gates import CACHE

    return CACHE.parent / "questions"


def _archive(lib: dict[str, Any], cache: Path) -> bytes:
    """The library's archive as the registry serves it (sdist, npm tarball or Debian package), cached."""
    if lib["registry"] in ("pypi", "npm"):
        from eval.redaction_gates import fetch

        return fetch(lib["registry"], lib["package"], lib["package_version"])
    if lib["registry"] != "debian":
        raise ValueError(f"unknown registry {lib['registry']!r} (pypi, npm or debian)")
    debs = cache / "debs"
    debs.mkdir(parents=True, exist_ok=True)
    pattern = f"{lib['package']}_{lib['package_version'].split(':')[-1]}_*.deb"
    if not list(debs.glob(pattern)):
        cmd = ["apt-get", "download", f"{lib['package']}={lib['package_version']}"]
        out = subprocess.run(cmd, cwd=debs, capture_output=True, text=True, timeout=600)
        if out.returncode != 0 and os.geteuid() == 0:  # a fresh machine's package lists may be empty
            subprocess.run(["apt-get", "update", "-q"], capture_output=True, timeout=600)
            out = subprocess.run(cmd, cwd=debs, capture_output=True, text=True, timeout=600)
        if out.returncode != 0:
            raise RuntimeError(f"apt-get download {lib['package']}={lib['package_version']} failed "
                               f"(exit {out.returncode}; run `apt-get update` first if the version is not "
                               f"found): {out.stderr.strip()[-300:]}")
    (deb,) = debs.glob(pattern)
    return deb.read_bytes()


def _extract(lib: dict[str, Any], data: bytes, dest: Path) -> None:
    if lib["registry"] == "debian":
        with tempfile.NamedTemporaryFile(suffix=".deb") as fh:
            fh.write(data)
            fh.flush()
            subprocess.run(["dpkg", "-x", fh.name, str(dest)], check=True, capture_output=True, timeout=600)
    else:
        from eval.retrieval_gates import unpack

        unpack(data, dest)


def source(spec: dict[str, Any], cache: Path | None = None) -> Path:
    """The root of the library's pinned source, fetched, checked against its sha256 and unpacked once."""
    lib = spec["library"]
    cache = cache or cache_dir()
    tree = cache / f"{lib['registry']}-{lib['package']}-{lib['package_version']}".replace(":", "_").replace("~", "_")
    if not tree.is_dir():
        data = _archive(lib, cache)
        digest = hashlib.sha256(data).hexdigest()
        if digest != lib["sha256"]:
            raise RuntimeError(f"{lib['package']} {lib['package_version']}: the archive fetched has sha256 "
                               f"{digest}, the set pins {lib['sha256']}; the set was written against other "
                               f"code (delete {cache} if a cached download is damaged)")
        cache.mkdir(parents=True, exist_ok=True)
        part = Path(tempfile.mkdtemp(prefix=tree.name + ".", dir=cache))
        try:
            _extract(lib, data, part)
            part.rename(tree)
        except BaseException:
            shutil.rmtree(part, ignore_errors=True)
            raise
    root = tree / lib["root"] if lib["root"] else tree
    if not root.is_dir():
        raise RuntimeError(f"{lib['package']}: {lib['root']!r} is not a folder of the unpacked archive {tree}")
    return root


# ---- definitions, found without memtree's chunkers -------------------------------------------------------

@dataclass
class Definition:
    ranges: list[tuple[int, int]] = field(default_factory=list)  # 1-based, inclusive
    doc: list[str] = field(default_factory=list)  # its docstring or comments


def _python_defs(text: str) -> dict[str, Definition]:
    out: dict[str, Definition] = {}

    def walk(body: list[ast.stmt], prefix: str) -> None:
        for n in body:
            if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                d = out.setdefault(prefix + n.name, Definition())
                first = min([n.lineno] + [x.lineno for x in n.decorator_list])
                d.ranges.append((first, n.end_lineno or n.lineno))
                d.doc.append(ast.get_docstring(n) or "")
                walk(n.body, prefix + n.name + ".")
    walk(ast.parse(text).body, "")
    return out


_COMMENT = re.compile(r"//(.*)$|/\*(.*?)\*/", re.S | re.M)


def _comments(lines: list[str], first: int, last: int) -> str:
    """Comments in lines first..last and in the comment block right above ``first``."""
    start = first
    while start > 1 and lines[start - 2].strip().startswith(("//", "/*", "*")):
        start -= 1
    return " ".join(a or b for a, b in _COMMENT.findall("\n".join(lines[start - 1:last])))


def _ts_defs(lang: str, text: str) -> dict[str, Definition]:
    import tree_sitter

    if lang == "go":
        import tree_sitter_go as grammar
    else:
        import tree_sitter_javascript as grammar
    source_bytes = text.encode("utf-8")
    tree = tree_sitter.Parser(tree_sitter.Language(grammar.language())).parse(source_bytes)
    lines = text.splitlines()
    out: dict[str, Definition] = {}

    def add(name: str, node: Any) -> None:
        first, last = node.start_point[0] + 1, node.end_point[0] + 1
        d = out.setdefault(name, Definition())
        d.ranges.append((first, last))
        d.doc.append(_comments(lines, first, last))

    def name_of(node: Any) -> str | None:
        n = node.child_by_field_name("name")
        return n.text.decode() if n is not None else None

    def go(node: Any) -> None:
        for child in node.children:
            if child.type == "function_declaration":
                add(name_of(child) or "", child)
            elif child.type == "method_declaration":
                recv = child.child_by_field_name("receiver")
                rtype = re.sub(r"\[.*?\]", "", recv.text.decode()) if recv is not None else ""
                words = re.findall(r"[A-Za-z_]\w*", rtype)
                add(f"{words[-1]}.{name_of(child)}" if words else name_of(child) or "", child)
            elif child.type in ("type_declaration", "var_declaration", "const_declaration"):
                specs = [c for c in child.named_children if c.type.endswith("_spec")]
                for list_node in [c for c in child.named_children if c.type.endswith("_spec_list")]:
                    specs += [c for c in list_node.named_children if c.type.endswith("_spec")]
                for spec in specs:
                    names = [spec.child_by_field_name("name")] if spec.type in ("type_spec", "type_alias") else \
                        [c for c in spec.children_by_field_name("name")]
                    for n in names:
                        if n is not None:
                            add(n.text.decode(), spec if len(specs) > 1 else child)

    function_values = {"arrow_function", "function_expression", "function", "generator_function", "class"}

    def js(node: Any) -> None:
        for child in node.named_children:
            t = child.type
            if t in ("function_declaration", "generator_function_declaration"):
                add(name_of(child) or "", child)
            elif t in ("class_declaration", "class") and name_of(child):
                cls = name_of(child)
                add(cls or "", child)
                body = child.child_by_field_name("body")
                for m in body.named_children if body is not None else []:
                    if m.type == "method_definition":
                        add(f"{cls}.{name_of(m)}", m)
            elif t == "variable_declarator":
                value = child.child_by_field_name("value")
                if value is not None and value.type in function_values and name_of(child):
                    add(name_of(child) or "", child.parent)
            elif t == "expression_statement" and child.parent is not None and child.parent.type == "program":
                expr = child.named_children[0] if child.named_children else None
                left = expr.child_by_field_name("left") if expr is not None and expr.type == \
                    "assignment_expression" else None
                if left is not None and left.type == "member_expression":
                    add(left.text.decode(), child)
            js(child)

    (go if lang == "go" else js)(tree.root_node)
    return out


LANGUAGES = {".py": "python", ".go": "go", ".js": "javascript", ".cjs": "javascript", ".mjs": "javascript"}


def definitions(path: Path) -> dict[str, Definition]:
    """Every definition of a source file by symbol (``Class.method``; ``Type.method`` in Go)."""
    lang = LANGUAGES.get(path.suffix)
    if lang is None:
        raise ValueError(f"{path.name}: no definition finder for {path.suffix} files")
    text = path.read_text(encoding="utf-8")
    return _python_defs(text) if lang == "python" else _ts_defs(lang, text)


def resolve(spec: dict[str, Any], root: Path) -> tuple[list[list[tuple[str, int, int]]], list[str]]:
    """Each question's targets as (path, first line, last line) ranges, and the targets that did not resolve."""
    cache: dict[str, dict[str, Definition]] = {}
    out, bad = [], []
    for q in spec["questions"]:
        ranges = []
        for path, symbol in q["targets"]:
            if path not in cache:
                cache[path] = definitions(root / path) if (root / path).is_file() else {}
            d = cache[path].get(symbol)
            if d is None:
                bad.append(f"{path}: {symbol} ({q['q']!r})")
                continue
            ranges += [(path, a, b) for a, b in d.ranges]
        out.append(ranges)
    return out, bad


# ---- the validator ----------------------------------------------------------------------------------------

def _words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", text.lower())


def _split_identifier(name: str) -> list[str]:
    parts = re.findall(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+", name)
    return [p.lower() for p in parts]


def names_identifier(question: str, symbol: str, path: str) -> str | None:
    """The way ``question`` names the definition ``symbol`` (of ``path``), or None.

    The definition's own name (the last part of ``Class.method``; for an anonymous ``module.exports`` the
    file's name) counts as named when a token of the question is that name, whatever its case and
    underscores, or when it is written out word by word (three words or more: "strip absolute path")."""
    own = symbol.rsplit(".", 1)[-1].strip("[]#")
    if symbol.startswith("module.exports"):
        own = Path(path).stem
    key = re.sub(r"[^a-z0-9]", "", own.lower())
    if not key:
        return None
    for token in re.findall(r"[A-Za-z0-9_$-]+", question):
        if re.sub(r"[^a-z0-9]", "", token.lower()) == key:
            return token
    words = _split_identifier(own.replace("-", "_"))
    if len(words) >= PHRASE_WORDS and " ".join(words) in " ".join(_words(question)):
        return " ".join(words)
    return None


def copied_doc(question: str, doc: str, n: int = COPY_WORDS) -> str | None:
    """A run of ``n`` words the question shares with ``doc``, or None."""
    q, d = _words(question), _words(doc)
    grams = {tuple(d[i:i + n]) for i in range(len(d) - n + 1)}
    for i in range(len(q) - n + 1):
        if tuple(q[i:i + n]) in grams:
            return " ".join(q[i:i + n])
    return None


def check_shape(spec: dict[str, Any]) -> list[str]:
    """Problems of a set on its own: enough distinct questions, each with targets, a pinned library."""
    bad = []
    lib = spec.get("library", {})
    for key in ("name", "version", "registry", "package", "package_version", "root", "sha256"):
        if not isinstance(lib.get(key), str):
            bad.append(f"library.{key} missing")
    qs = spec.get("questions", [])
    if len(qs) < MIN_QUESTIONS:
        bad.append(f"{len(qs)} questions, fewer than {MIN_QUESTIONS}")
    if len({q.get("q") for q in qs}) != len(qs):
        bad.append("a question appears twice")
    for q in qs:
        targets = q.get("targets")
        if not isinstance(q.get("q"), str) or not targets or not all(
                isinstance(t, list) and len(t) == 2 and all(isinstance(x, str) and x for x in t) for t in targets):
            bad.append(f"malformed question {q!r}: want {{'q': str, 'targets': [[path, symbol], ...]}}")
    return bad


def validate(spec: dict[str, Any], root: Path) -> list[str]:
    """Everything wrong with a set against its pinned source; empty when the set is sound."""
    bad = check_shape(spec)
    if bad:
        return bad
    _, unresolved = resolve(spec, root)
    bad += [f"target is not a definition: {u}" for u in unresolved]
    cache: dict[str, dict[str, Definition]] = {}
    for q in spec["questions"]:
        for path, symbol in q["targets"]:
            if not (root / path).is_file():
                continue
            if path not in cache:
                cache[path] = definitions(root / path)
            named = names_identifier(q["q"], symbol, path)
            if named:
                bad.append(f"{q['q']!r} names its target {symbol} ({named!r})")
            d = cache[path].get(symbol)
            copied = d and copied_doc(q["q"], " ".join(d.doc))
            if copied:
                bad.append(f"{q['q']!r} copies the documentation of {symbol} ({copied!r})")
    return bad
