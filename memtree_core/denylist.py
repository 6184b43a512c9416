"""Commands whose whole capture is dropped (spec §7): ``env``, ``printenv`` and the regexes in
``$MEMTREE_HOME/<project-hash>/bash.deny``.  (First cut; the capture work refines the matching.)"""

from __future__ import annotations

import re
from pathlib import Path

_BUILTIN = re.compile(r"(?:^|[;&|(]\s*)(?:env|printenv)(?:\s*$|\s*[;&|)])")


def load_patterns(deny_file: Path) -> list[re.Pattern[str]]:
    try:
        lines = deny_file.read_text(encoding="utf-8").splitlines()
    except OSError:
        return []
    out = []
    for line in lines:
        line = line.strip()
        if line and not line.startswith("#"):
            try:
                out.append(re.compile(line))
            except re.error:
                continue
    return out


def command_denied(command: str, deny_file: Path) -> str | None:
    """Return why ``command``'s output must not be stored, or None."""
    if _BUILTIN.search(command.strip()):
        return "env-dump"
    for pattern in load_patterns(deny_file):
        if pattern.search(command):
            return f"bash.deny:{pattern.pattern}"
    return None
