"""Priors applied to a ranked list: what kind of chunk a query of this shape most likely means.

* Source before tests, docs and changelogs.  A question in words ("where do we retry failed payments")
  asks where the code does something.  Test files repeat the same words (a test of the retry names
  retries, failures and payments), and a README or a CHANGELOG describes the behaviour in exactly the
  words a developer asks in, so both outrank the code that does it.  Unless the query is one identifier
  (keyword search's definitions-first order is kept, see memtree_plugins/lib/fusion.py) or asks for them
  -- by words ("which test covers...", "what does the changelog say", "docs"), or by naming a path --
  a chunk of a test file keeps ``TEST_FACTOR`` of its score and a chunk of documentation ``DOC_FACTOR``.
* The member before its header.  A module header (licence, docstring, imports) or a file's outline
  (the ``file`` node listing its chunks) names many of the words of the file, so it matches most questions
  about the file and answers few: it keeps ``HEADER_FACTOR`` of its score.  When a class header (its
  signature, docstring and attributes), a module header or an outline matches beside a method or function
  of that same class or file, the member does the work the query asks about: it is moved just above the
  header (python -m eval.questions: gorilla-websocket auto MRR 0.37 -> 0.43, where moving the header down
  below the member had lost struct and method alike when the method ranked low).

Each prior changes the score it is ranked by, so the score a result shows is the one it was ranked by.

Measured with ``python -m eval.retrieval_gates`` and ``python -m eval.questions`` (hit@5 and MRR per mode,
all four sets): test and doc factors 0.3 beat 0.5 (tar hybrid hit@5 0.53 -> 0.58, MRR up on every set;
0.2 was the same, 0.7 worse everywhere); a header factor of 0.3 or 0.7 was no better than 0.5.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from memtree_plugins.lib.fusion import query_shape

TEST_FACTOR = 0.3
DOC_FACTOR = 0.3
HEADER_FACTOR = 0.5
# a test folder anywhere in the path, or a file named as test runners of common languages expect
_TEST_PATH = re.compile(
    r"/(?:tests?|testing|__tests__|specs?)/"
    r"|/(?:test_[^/]*|[^/]*_test\.\w+|[^/]*\.(?:test|spec)\.\w+|[^/]*Tests?\.(?:java|kt|cs|swift)|conftest\.py)$")
# prose files, a documentation folder, or the files every project keeps beside its code
_DOC_PATH = re.compile(
    r"\.(?:md|markdown|mdx|rst|txt|adoc|asciidoc|org|rdoc|textile)$"
    r"|/(?:docs?|documentation|man)/"
    r"|/(?:readme|changelog|changes|history|news|releases?|release[-_]notes|contributing|authors|notice"
    r"|licen[cs]e|copying|upgrading|migrating|migration)(?:\.[^/]*)?$", re.I)
_ABOUT_TESTS = re.compile(r"\b(?:tests?|testing|tested|specs?|fixtures?|mocks?|pytest|unittest|jest)\b", re.I)
_ABOUT_DOCS = re.compile(r"\b(?:docs?|documentation|documented|readme|changelog|changes|release notes?|released?"
                         r"|history|news|guide|tutorial|manual|markdown|upgrading|migration guide)\b", re.I)
# a word that names a path: a folder separator, or a file name with an extension
_PATHLIKE = re.compile(r"\S/\S|^[\w.-]+\.(?:md|rst|txt|py|js|ts|go|rs|java|json|toml|ya?ml|cfg|ini)$", re.I)
_HEADER_KINDS = frozenset({"module_header"})


def is_test_path(source_uri: str | None) -> bool:
    path = (source_uri or "").split("#", 1)[0]
    return bool(_TEST_PATH.search(path))


def is_doc_path(source_uri: str | None) -> bool:
    path = (source_uri or "").split("#", 1)[0]
    return path.startswith("file:") and bool(_DOC_PATH.search(path))


def factors_for(query: str) -> tuple[float, float]:
    """(test factor, doc factor) for ``query``: 1.0 where the query asks for that kind of file."""
    if query_shape(query) == "identifier" or any(_PATHLIKE.search(w) for w in query.split()):
        return 1.0, 1.0
    return (1.0 if _ABOUT_TESTS.search(query) else TEST_FACTOR,
            1.0 if _ABOUT_DOCS.search(query) else DOC_FACTOR)


def apply_priors(query: str, order: list[tuple[str, float]], source_of: Callable[[str], str | None],
                 meta_of: Callable[[str], dict[str, Any]] | None = None) -> list[tuple[str, float]]:
    """``order`` (node id, score, best first; higher is better) re-scored and re-sorted by the priors for
    ``query``.  ``meta_of``: a node's metadata (its chunk ``kind`` and ``symbol``), for the member-before-
    header prior; without it that prior is skipped."""
    test_f, doc_f = factors_for(query)
    if test_f == doc_f == 1.0:
        return order
    scored = []
    for nid, score in order:
        uri = source_of(nid)
        factor = test_f if is_test_path(uri) else doc_f if is_doc_path(uri) else 1.0
        if meta_of is not None and _is_header(uri, meta_of(nid) or {}):
            factor *= HEADER_FACTOR
        scored.append((nid, score * factor if score > 0 else score / factor))
    scored.sort(key=lambda x: -x[1])  # stable: ties keep the given order
    if meta_of is not None:
        scored = members_before_headers(scored, source_of, meta_of)
    return scored


def _is_header(uri: str | None, meta: dict[str, Any]) -> bool:
    """A module header chunk, or a file's outline node (a source without a line range, listing chunks)."""
    return meta.get("kind") in _HEADER_KINDS or ("#" not in (uri or "#") and "chunks" in meta)


def members_before_headers(order: list[tuple[str, float]], source_of: Callable[[str], str | None],
                           meta_of: Callable[[str], dict[str, Any]]) -> list[tuple[str, float]]:
    """A class or module header that ranks above a member of its own (a method of the class, a definition
    of the module's file) gives that member its place: the first such member gets a score just above the
    header's, the header keeps its own, and the list is sorted again.  The header matched the query well
    enough to rank there, and the member is where the work is done; pushing the header down to the member's
    rank instead would lose both when the member ranked low (a struct first in both lists, its one method
    25th: neither in the top 5)."""
    info = []
    for nid, score in order:
        meta = meta_of(nid) or {}
        sym = meta.get("symbol") if isinstance(meta.get("symbol"), str) else ""
        uri = source_of(nid) or ""
        info.append((nid, score, uri.split("#", 1)[0], _is_header(uri, meta), sym))
    out = dict(order)
    for i, (nid, _score, path, header, sym) in enumerate(info):
        if not path or not (header or sym):
            continue
        member = next((m for m, _s, p, _h, msym in info[i + 1:] if p == path and msym
                       and (header or msym.startswith(sym + "."))), None)
        if member is not None and out[member] <= out[nid]:
            out[member] = out[nid] + abs(out[nid]) * 1e-3 + 1e-9
    return sorted(out.items(), key=lambda x: -x[1])
