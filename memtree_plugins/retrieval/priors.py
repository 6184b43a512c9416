"""Query-shape priors applied after fusion: what kind of chunk a query of this shape most likely means.

* A prose question ("where do we retry failed payments") asks where the code does something: the
  implementation, not the tests that exercise it.  Test files repeat the same words (a test of the retry
  names retries, failures and payments) and often outrank the code, so for prose queries a chunk of a test
  file keeps ``TEST_FACTOR`` of its fused score -- unless the query itself is about tests.
* An identifier-shaped query keeps keyword search's definitions-first order (see fusion.py); no prior
  here changes it.

Measured with ``python -m eval.retrieval_gates``: on the requests questions, hybrid hit@5 0.88 -> 0.90 and
MRR 0.65 -> 0.70 with ``TEST_FACTOR`` = 0.5.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from memtree_plugins.lib.fusion import query_shape

TEST_FACTOR = 0.5
# a test folder anywhere in the path, or a file named as test runners of common languages expect
_TEST_PATH = re.compile(
    r"/(?:tests?|testing|__tests__|specs?)/"
    r"|/(?:test_[^/]*|[^/]*_test\.\w+|[^/]*\.(?:test|spec)\.\w+|[^/]*Tests?\.(?:java|kt|cs|swift)|conftest\.py)$")
_ABOUT_TESTS = re.compile(r"\b(?:tests?|testing|tested|specs?|fixtures?|mocks?|pytest|unittest|jest)\b", re.I)


def is_test_path(source_uri: str | None) -> bool:
    path = (source_uri or "").split("#", 1)[0]
    return bool(_TEST_PATH.search(path))


def apply_priors(query: str, order: list[tuple[str, float]],
                 source_of: Callable[[str], str | None]) -> list[tuple[str, float]]:
    """``order`` (node id, fused score, best first) re-sorted by the priors for ``query``'s shape."""
    if query_shape(query) != "prose" or _ABOUT_TESTS.search(query):
        return order
    scored = [(nid, score * TEST_FACTOR if is_test_path(source_of(nid)) else score) for nid, score in order]
    return sorted(scored, key=lambda x: -x[1])  # stable: ties keep the fused order
