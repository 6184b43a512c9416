"""Refresh the shipped gitleaks catalogue from a gitleaks release (or a local file).

    python -m memtree_plugins.redaction.catalogue.refresh                # the latest release
    python -m memtree_plugins.redaction.catalogue.refresh --ref v8.30.0  # a tag, branch or commit
    python -m memtree_plugins.redaction.catalogue.refresh --file gitleaks.toml --ref <commit>

It downloads ``config/gitleaks.toml`` and ``LICENSE`` at that ref, checks that every rule loads and compiles
in the engine (:class:`~memtree_plugins.redaction.catalogue.matcher.Engine`: RE2, gitleaks' checks), and
only then rewrites ``gitleaks.toml``, ``LICENSE.gitleaks`` and ``SOURCE.gitleaks`` beside this file.
Nothing is written when a check fails; the message names the rule.  Run the redaction tests afterwards
(``tests/plugins/redaction``) and bump ``RULESET_VERSION`` in rules.py: what is redacted changed.
"""

from __future__ import annotations

import argparse
import json
import sys
import urllib.request
from pathlib import Path

from memtree_plugins.redaction.catalogue import HERE, CatalogueError, parse

REPO = "gitleaks/gitleaks"
RAW = "https://raw.githubusercontent.com/{repo}/{ref}/{path}"
LATEST = "https://api.github.com/repos/{repo}/releases/latest"


def _get(url: str, timeout: float = 30) -> bytes:
    req = urllib.request.Request(url, headers={"User-Agent": "memtree-catalogue-refresh"})
    with urllib.request.urlopen(req, timeout=timeout) as resp:  # noqa: S310 (https only, fixed hosts)
        return resp.read()


def latest_release(repo: str = REPO) -> str:
    return str(json.loads(_get(LATEST.format(repo=repo)))["tag_name"])


def validate(data: bytes, source: str) -> tuple[int, dict[str, str]]:
    """Load ``data`` and compile it in the engine: the number of rules that run and those skipped (with why).
    Raises :class:`CatalogueError` naming the first rule that cannot be used."""
    from memtree_plugins.redaction.catalogue.matcher import Engine

    cat = parse(data, source)
    if not cat.rules:
        raise CatalogueError(f"{source}: no rules with a regex; is this gitleaks' config/gitleaks.toml?")
    engine = Engine(cat, compile_all=True)
    return len(engine.rules), cat.skipped


def write(dest: Path, config: bytes, licence: bytes, source_line: str) -> None:
    """Rewrite the three files, each through a temporary file and a rename."""
    for name, data in (("gitleaks.toml", config), ("LICENSE.gitleaks", licence),
                       ("SOURCE.gitleaks", source_line.encode())):
        tmp = dest / f".{name}.tmp"
        tmp.write_bytes(data)
        tmp.replace(dest / name)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m memtree_plugins.redaction.catalogue.refresh",
                                 description="Replace the shipped gitleaks catalogue with a newer gitleaks "
                                             "release's config/gitleaks.toml, after checking it compiles.")
    ap.add_argument("--ref", help="gitleaks tag, branch or commit (default: the latest release)")
    ap.add_argument("--repo", default=REPO, help=f"GitHub repository (default {REPO})")
    ap.add_argument("--file", type=Path, help="use this gitleaks.toml instead of downloading (with --ref to "
                                             "record where it came from; the licence is then kept)")
    ap.add_argument("--dest", type=Path, default=HERE, help="where the catalogue lives (default: this package)")
    ap.add_argument("--check", action="store_true", help="validate only; write nothing")
    args = ap.parse_args(argv)
    try:
        if args.file is not None:
            ref = args.ref or "local file"
            config = args.file.read_bytes()
            licence = (args.dest / "LICENSE.gitleaks").read_bytes()
        else:
            ref = args.ref or latest_release(args.repo)
            config = _get(RAW.format(repo=args.repo, ref=ref, path="config/gitleaks.toml"))
            licence = _get(RAW.format(repo=args.repo, ref=ref, path="LICENSE"))
        if b"MIT License" not in licence:
            raise CatalogueError(f"{args.repo}@{ref}: LICENSE is not the MIT licence any more; check its terms "
                                 f"before shipping the rules")
        n, skipped = validate(config, f"{args.repo}@{ref}:config/gitleaks.toml")
    except (OSError, CatalogueError, ValueError, KeyError) as exc:
        print(f"refresh failed, nothing written: {exc}", file=sys.stderr)
        return 1
    print(f"{n} rules compile in the engine; skipped on text: "
          + (", ".join(f"{k} ({v})" for k, v in skipped.items()) or "none"))
    if args.check:
        return 0
    write(args.dest, config, licence,
          f"gitleaks config/gitleaks.toml from https://github.com/{args.repo}\n"
          f"ref {ref}\n"
          f"licence: MIT, LICENSE.gitleaks beside this file\n"
          f"refresh: python -m memtree_plugins.redaction.catalogue.refresh --help\n")
    print(f"wrote {args.dest / 'gitleaks.toml'} from {args.repo}@{ref}; now run tests/plugins/redaction and "
          f"bump RULESET_VERSION in memtree_plugins/redaction/rules.py")
    return 0


if __name__ == "__main__":
    sys.exit(main())
