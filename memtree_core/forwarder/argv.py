"""``memtree serve``'s own command line, read without argparse: its imports (argparse, gettext, locale,
shutil, typing) cost more than the rest of the forwarder's start-up."""

from __future__ import annotations


def plain_serve(argv: list[str]) -> tuple[bool, str | None]:
    """``(True, project)`` when ``argv`` is exactly ``serve``, ``serve --project DIR`` or ``serve
    --project=DIR``; anything else (help, an unknown option, a value argparse would take for an option) goes
    through argparse, which answers it as it always did."""
    if not argv or argv[0] != "serve":
        return False, None
    rest = argv[1:]
    if not rest:
        return True, None
    if len(rest) == 2 and rest[0] == "--project" and not rest[1].startswith("-"):
        return True, rest[1]
    if len(rest) == 1 and rest[0].startswith("--project="):
        return True, rest[0].partition("=")[2]
    return False, None
