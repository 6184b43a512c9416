"""eval/bench/rerank.py reranks ``auto``'s own list: its candidates are the search tool's hits, in order, on a
real indexed and embedded store; its blend and its windows do what the bench's docstring says."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the eval package lives beside the tests

from eval.bench import rerank  # noqa: E402

TOPICS = {
    "retry.py": ("compute_backoff", "the delay before the next retry grows with each failed attempt",
                 "return base * (2 ** attempt) + jitter"),
    "auth.py": ("strip_credentials", "drop the authorization header when a redirect leaves the host",
                "headers.pop('Authorization', None)"),
    "cookies.py": ("merge_cookie_jars", "combine the session cookies with the cookies of one request",
                   "jar.update(other)"),
    "proxy.py": ("proxy_from_environment", "read the proxy address from HTTPS_PROXY unless NO_PROXY matches",
                 "return os.environ.get('HTTPS_PROXY')"),
    "stream.py": ("iter_chunks", "yield the body of a response piece by piece without reading it all",
                  "yield raw.read(size)"),
    "timeout.py": ("split_timeout", "a single timeout value becomes separate connect and read timeouts",
                   "return (value, value)"),
}
QUESTIONS = ["how long do we wait before trying again", "where is the auth header removed on redirect",
             "which environment variables choose a proxy", "read a big download in pieces"]


@pytest.fixture(scope="module")
def indexed(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    from eval.questions.run import search_tool
    from eval.retrieval_gates import open_indexed

    base = tmp_path_factory.mktemp("rerank-bench")
    root = base / "lib"
    root.mkdir()
    for name, (func, doc, body) in TOPICS.items():
        (root / name).write_text(f'import os\n\n\ndef {func}(value, attempt=0, base=1, jitter=0, raw=None, size=1,\n'
                                 f'        headers=None, jar=None, other=None):\n    """{doc}."""\n    {body}\n')
    (root / "README.md").write_text("# lib\n\nA small HTTP helper library: retries, proxies, cookies.\n")
    app = open_indexed(root, base / "home", None)
    try:
        yield app, search_tool(app)
    finally:
        app.close()


def test_the_candidates_are_the_search_tools_own_hits_in_order(indexed) -> None:  # type: ignore[no-untyped-def]
    from memtree_plugins.retrieval.search import auto_mode

    app, tool = indexed
    assert auto_mode(app)[0] == "hybrid"  # the fused path, as on the question sets
    for q in QUESTIONS:
        ids = rerank.candidates(app, q)
        hits = [h.id for h in tool(query=q, mode="auto", limit=rerank.DEPTH).hits]
        assert hits and ids[:rerank.DEPTH] == hits
        assert len(set(ids)) == len(ids)


def test_the_blend_keeps_todays_order_at_weight_zero_and_moves_only_the_reranked() -> None:
    sims = [0.1, 0.2, 0.9, 0.3]  # the reranker likes the third candidate best
    assert rerank.reorder(6, sims, 0.0) == [0, 1, 2, 3, 4, 5]
    assert rerank.reorder(6, sims, 10.0)[:1] == [2]
    assert rerank.reorder(6, sims, 10.0)[4:] == [4, 5]  # past the reranked N: where they were
    assert rerank.first_target([2, 0, 1], [False, False, True]) == 1
    assert rerank.first_target([0, 1], [False, False]) is None


def test_every_line_is_in_a_window_behind_the_header() -> None:
    from memtree_plugins.embedders.onnx_minilm import OnnxMiniLM, shipped_dir

    model_dir = shipped_dir()
    assert model_dir is not None, "the shipped MiniLM model is missing"
    tok = OnnxMiniLM(model_dir, max_parts=1, workers=1).tokenizer
    lines = [f"value_{i} = compute_something(argument_{i}, other_{i})" for i in range(40)]
    out = rerank.windows(tok, "\n\n".join(lines), "retry.py\nfunction f", 32)
    assert len(out) > 2 and all(w.startswith("retry.py\nfunction f\n") for w in out)
    assert {line for w in out for line in w.splitlines()[2:]} == set(lines)
    for w in out:
        body = w.splitlines()[2:]
        assert len(body) == 1 or sum(len(tok.encode(x, add_special_tokens=False).ids) for x in body) <= 32
    assert rerank.windows(tok, "  \n", "retry.py", 32) == ["retry.py"]  # a blank body: the header alone


def test_the_lexical_reranker_prefers_the_window_that_holds_the_questions_words() -> None:
    scorer = rerank.LexicalScorer(2)
    filler = "\n".join(f"x{i} = {i}" for i in range(10))
    sims, cpu = scorer.score("where is the retry delay computed", [
        ("a.py\nfunction a", filler),
        ("b.py\nfunction b", filler + "\nretry_delay = compute(base)\n" + filler),  # identifier words count
        ("c.py\nfunction retryDelay", filler)])  # so do the name's
    assert sims[1] > sims[0] and sims[2] > sims[0] and len(cpu) == 3
