"""What the redaction *flow* adds to the rules: the environment-dump rule (memtree_plugins/redaction/
envdump.py) and the line-keeping pass (memtree_core/daemon/redacting.py), as a ratio against the rules alone
(eval/bench/redaction.py's figure) measured in the same run.

    python eval/bench/redaction_flow.py [--repeat N]

Inputs, 100 KB each: the clean and mixed texts of the redaction bench; a real environment dump (this
process's own, repeated); a dump's shape with names this process does not have; and two PEM keys in
clean text (rules that fold lines, so the line-keeping pass realigns).  Best of N runs, as there.
"""

from __future__ import annotations

import argparse
import base64
import os
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from eval.bench.redaction import LEAKY, SIZE, best_ms, fill, redact_all  # noqa: E402
from memtree_core.daemon.redacting import redact  # noqa: E402
from memtree_plugins.redaction.envdump import EnvDumpRule  # noqa: E402
from memtree_plugins.redaction.rules import RULES  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=15)
    args = ap.parse_args()
    rng = random.Random(7)
    leaky = [p.read_text() for p in sorted(LEAKY.glob("*")) if p.is_file() and p.suffix != ".json"]
    clean = [p.read_text() for p in sorted((LEAKY / "clean").glob("*"))]
    key = ("-----BEGIN RSA PRIVATE KEY-----\n" + "".join(base64.b64encode(rng.randbytes(48)).decode() + "\n"
                                                         for _ in range(40)) + "-----END RSA PRIVATE KEY-----\n")
    inputs = {
        "clean": fill(clean),
        "mixed": fill([x for pair in zip(clean * 2, leaky, strict=False) for x in pair]),
        "env dump": fill(["".join(f"{k}={v}\n" for k, v in os.environ.items())]),
        "foreign dump": fill([f"VAR_{i}=value-{rng.random()}\n" for i in range(200)]),
        "two keys": fill([clean[0][:20_000], key, clean[-1][:20_000], key]),
    }
    rule = EnvDumpRule()
    rules = [rule, *RULES]
    print(f"flow = env-dump rule + {len(RULES)} rules + line keeping; text {SIZE // 1024} KB; best of {args.repeat}")
    for name, text in inputs.items():
        base = best_ms(redact_all, text, args.repeat)
        flow = best_ms(lambda t: redact(rules, t), text, args.repeat)
        env = best_ms(rule.redact, text, args.repeat)
        print(f"  {name:<13} rules {base:7.2f} ms   flow {flow:7.2f} ms = {flow / base:5.2f}x the rules alone"
              f"   (env-dump rule {env:6.2f} ms)")


if __name__ == "__main__":
    main()
