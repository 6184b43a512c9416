"""``python -m eval.questions [--set NAME] [--modes keyword,semantic,hybrid,auto] [--misses] [--keep DIR]``:
hit@5 and MRR per mode and set on the frozen developer question sets (eval/questions/README.md)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    from eval import questions
    from eval.harness import BLAS_THREADS, Run, print_table
    from eval.questions import run as qrun

    parser = argparse.ArgumentParser(prog="python -m eval.questions", description=__doc__.split("\n\n")[0])
    parser.add_argument("--set", action="append", dest="sets", metavar="NAME",
                        help=f"a set to measure (repeat or comma-separate; default all: "
                             f"{', '.join(questions.set_names())})")
    parser.add_argument("--modes", default=",".join(qrun.MODES),
                        help="comma list of search modes (default: %(default)s)")
    parser.add_argument("--misses", action="store_true", help="list the questions each mode missed")
    parser.add_argument("--keep", type=Path, metavar="DIR",
                        help="directory kept between runs: the copies, stores and vectors are reused (delete a "
                             "set's home-NAME folder in it after a change to what is indexed or embedded)")
    args = parser.parse_args(argv)
    names = [n.strip() for s in args.sets or [] for n in s.split(",") if n.strip()] or questions.set_names()
    unknown = [n for n in names if n not in questions.set_names()]
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    bad_modes = [m for m in modes if m not in qrun.MODES]
    if unknown or bad_modes or not modes:
        parser.error(f"unknown set(s) {unknown} (choose from {', '.join(questions.set_names())})" if unknown else
                     f"unknown mode(s) {bad_modes or modes} (choose from {', '.join(qrun.MODES)})")
    for key, value in BLAS_THREADS.items():
        os.environ.setdefault(key, value)
    run = Run()
    try:
        results = qrun.measure(names, modes, keep=args.keep)
    except Exception as exc:  # noqa: BLE001 - a fetch or index failure is reported, not a traceback
        run.gate(qrun.SECTION, "question sets measured", False, f"{type(exc).__name__}: {exc}")
        results = []
    qrun.report(run, results, show_misses=args.misses)
    qrun.gates(run, results)
    print_table(run)
    return 1 if run.failed else 0


if __name__ == "__main__":
    sys.exit(main())
