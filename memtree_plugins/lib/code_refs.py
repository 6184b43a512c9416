"""What a definition chunk refers to by name: the calls, imports, base classes and type uses a chunker reads
off its syntax tree while chunking (``docs/architecture.md#the-store``: ``references`` edges).

A chunker that knows its language returns :class:`RefChunk` (a :class:`~memtree_core.types.Chunk` with a
``refs`` tuple) for every chunk of a file it read references in; other chunks have none.  A :class:`Ref` names its target the way the source spells it,
with the receiver made concrete where the chunker can (``self.load()`` inside class ``Schema`` becomes
``Schema.load``); imports carry the module they come from in ``target``.  Resolving names to chunks is
:mod:`memtree_plugins.lib.ref_links`' work, when the chunks are stored.

Relations: ``calls`` (a call or a decorator), ``inherits`` (a base class, an implemented interface, an
embedded struct), ``uses`` (a name read; kept as ``uses-type`` when it resolves to a type), ``uses-type`` (a
name in a type annotation), ``imports``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import NamedTuple

from memtree_core.types import Chunk

# A method called on a Python value of unknown type is known by its name only; one that Python's own types
# have (``"".join``, ``d.update``, ``xs.copy``) most likely means theirs, not the repository's of that name.
PYTHON_TYPE_METHODS = frozenset(m for t in (str, bytes, bytearray, list, dict, set, frozenset, tuple, int, float,
                                            complex, object, memoryview, range, slice) for m in dir(t))
# The same for JavaScript/TypeScript: the methods of Array, String, Map, Set, Promise, Object and Function.
JS_TYPE_METHODS = frozenset("""
at concat copyWithin entries every fill filter find findIndex findLast findLastIndex flat flatMap forEach includes
indexOf join keys lastIndexOf map pop push reduce reduceRight reverse shift slice some sort splice toLocaleString
toString unshift values charAt charCodeAt codePointAt endsWith localeCompare match matchAll normalize padEnd
padStart repeat replace replaceAll search split startsWith substring substr toLowerCase toUpperCase trim
trimStart trimEnd get set has delete clear add then catch finally hasOwnProperty valueOf call apply bind
""".split())
TYPE_METHODS = {"python": PYTHON_TYPE_METHODS, "js": JS_TYPE_METHODS}
TYPED = "type:"  # a call named ``type:T.m``: the receiver's declared type is T, so m is T's or unknown
# Go: a result type (``returns``, target ``T.m``) and a struct field's type (``has``, target ``T.f``) a file
# states for the other files of its package, read by typed chains (``type:Route@Path().Handler``), no links.
# Python: what a member gives (``gives``, target ``C.m()``, ``C.p``, ``f()``, ``C.p[]``), read by path walks
# (``C.fetch().read``), no links either.
STATED = frozenset({"returns", "has", "gives"})
RELS = ("calls", "imports", "inherits", "uses-type", "uses")
MAX_REFS_PER_CHUNK = 400  # a generated table of calls says little more past this


class Ref(NamedTuple):
    rel: str
    name: str  # as used: ``helper``, ``mod.helper``, ``Class.method``; for an import, the alias bound
    line: int  # 1-based line of the use (which chunk it belongs to)
    target: str = ""  # an import's module or path (``pkg/mod``, ``./util``), with the imported name


@dataclass(frozen=True)
class RefChunk(Chunk):
    """A chunk with the references read in it (deduplicated, in order of first use)."""

    refs: tuple[Ref, ...] = ()


def refs_of(chunk: Chunk) -> tuple[Ref, ...]:
    return chunk.refs if isinstance(chunk, RefChunk) else ()


def attach(chunks: Sequence[Chunk], refs: Iterable[Ref]) -> list[Chunk]:
    """``chunks`` with each reference given to the chunk holding its line (chunks tile the file, in order)."""
    per: list[dict[tuple[str, str, str], Ref]] = [{} for _ in chunks]
    starts = [c.start_line for c in chunks]
    import bisect

    for r in refs:
        i = bisect.bisect_right(starts, r.line) - 1
        if 0 <= i < len(chunks) and len(per[i]) < MAX_REFS_PER_CHUNK:
            per[i].setdefault((r.rel, r.name, r.target), r)
    return [RefChunk(**{f: getattr(c, f) for f in c.__dataclass_fields__ if f != "refs"},  # type: ignore[arg-type]
                     refs=tuple(p.values())) for c, p in zip(chunks, per, strict=True)]


def read_refs(chunks: Sequence[Chunk]) -> bool:
    """Whether the chunker read references in these chunks (it returns :class:`RefChunk`, maybe with none):
    only then are the file's definitions and names recorded."""
    return bool(chunks) and all(isinstance(c, RefChunk) for c in chunks)


def split_refs(chunk: Chunk, start: int, end: int) -> Chunk:
    """``chunk`` cut to lines ``start..end`` keeps only the references on those lines."""
    refs = refs_of(chunk)
    if not refs:
        return chunk
    return replace(chunk, refs=tuple(r for r in refs if start <= r.line <= end))  # type: ignore[call-arg]
