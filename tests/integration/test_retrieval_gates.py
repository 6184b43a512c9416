"""The retrieval gates of ``python -m eval`` fail, and say why, when the libraries cannot be fetched; their
golden questions point at definitions (checked against the real sdist in the eval itself)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the eval package lives beside the tests

from eval import redaction_gates, retrieval_gates  # noqa: E402
from eval.harness import Run  # noqa: E402


def test_an_unreachable_registry_fails_the_gates_with_a_clear_message(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    import urllib.request

    (tmp_path / "probe").write_text("x")
    with urllib.request.urlopen((tmp_path / "probe").as_uri()):
        pass
    monkeypatch.setattr(redaction_gates, "CACHE", tmp_path / "empty-cache")
    # a proxy on a closed port: every download fails the way an offline CI machine's would
    for var in ("https_proxy", "HTTPS_PROXY", "http_proxy", "HTTP_PROXY"):
        monkeypatch.setenv(var, "http://127.0.0.1:9")
    monkeypatch.delenv("no_proxy", raising=False)
    monkeypatch.delenv("NO_PROXY", raising=False)
    # urlopen keeps the opener (and the proxies it read) built by the process's first call, which another
    # test may have made (as here, before the proxies are set): start from none, so the proxies are read
    monkeypatch.setattr(urllib.request, "_opener", None)
    run = Run()
    retrieval_gates.retrieval_gates(run)
    failed = run.failed
    assert len(failed) == len(retrieval_gates.SYMBOL_LIBRARIES)
    assert all("NETWORK FETCH FAILED" in o.detail for o in failed)
    assert not [o for o in run.outcomes if o.ok]  # nothing passes without the code it measures


def test_the_golden_questions_are_many_and_say_where_the_answer_is() -> None:
    spec = json.loads(retrieval_gates.QUESTIONS.read_text())
    qs = spec["questions"]
    assert len(qs) >= 40 and len({q["q"] for q in qs}) == len(qs)
    for q in qs:
        assert q["expect"] and all(p.endswith(".py") and 0 < a <= b for p, a, b in q["expect"])
