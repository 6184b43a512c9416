"""``python -m eval``: run the acceptance harness, print the table, exit 1 if a gate fails."""

from __future__ import annotations

import argparse
import os
import sys

from eval.harness import BLAS_THREADS

# before numpy is imported: walkers settle in this process (see BLAS_THREADS).  ``--blas-threads N`` overrides
# the environment's: alone on an idle 2-core machine (`tox -e eval`) the embedding forward pass is 1.4x faster
# on both cores; beside the other tests (tests/integration/test_eval_gates.py) it takes one.
_threads = sys.argv[sys.argv.index("--blas-threads") + 1] if "--blas-threads" in sys.argv[:-1] else None
for _name, _value in BLAS_THREADS.items():
    if _threads is not None:
        os.environ[_name] = _threads
    else:
        os.environ.setdefault(_name, _value)

import anyio  # noqa: E402

from eval.harness import main_async, print_table  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m eval", description=__doc__)
    parser.add_argument("--record", action="store_true",
                        help="rewrite the compose manifest hashes in eval/golden/compose.json (after an intended change)")
    parser.add_argument("--no-timing", action="store_true", help="skip the latency figures")
    parser.add_argument("--no-semantic", action="store_true", help="skip the semantic/hybrid recall table")
    parser.add_argument("--no-retrieval", action="store_true",
                        help="skip the retrieval gates on real libraries (eval/retrieval_gates.py; minutes of embedding)")
    parser.add_argument("--no-questions", action="store_true",
                        help="skip the frozen developer question sets (eval/questions: three libraries, every "
                             "search mode; minutes of embedding)")
    parser.add_argument("--no-catalogue", action="store_true",
                        help="skip the gates of redaction against gitleaks' catalogue (eval/catalogue_recall.py: "
                             "recall A >= 0.95, B >= 0.99 on the frozen samples)")
    parser.add_argument("--code-precision", action="store_true",
                        help="also gate redaction on 37 real libraries in 5 languages (eval/code_precision.py: "
                             "<= 0.5 redactions per 10k lines, every parseable file still parses); the first run "
                             "fetches them (pip site-packages, npm, Debian packages) into ~/.cache/memtree-eval")
    parser.add_argument("--blas-threads", type=int, metavar="N",
                        help="BLAS threads for the embedding forward pass (default: the environment's, else 1)")
    parser.add_argument("--embed-timeout", type=float, default=180.0,
                        help="seconds to wait for the embedding walker before measuring semantic recall")
    args = parser.parse_args()
    run = anyio.run(main_async, args.record, not args.no_timing, not args.no_semantic, args.embed_timeout,
                    not args.no_retrieval, not args.no_catalogue, args.code_precision)
    if not args.no_questions:
        from eval.questions.run import section

        section(run)  # eval/questions: hit@5 and MRR per set and mode
    print_table(run)
    return 1 if run.failed else 0


if __name__ == "__main__":
    sys.exit(main())
