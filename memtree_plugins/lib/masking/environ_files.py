"""A process's environment file (``/proc/<pid>/environ``) is all secrets by position.

However the path is spelt (``/proc/self//environ``, ``/proc/thread-self/environ``, ``/proc/$PPID/environ``
after the shell expanded it, a symlink to one), what the tools show or store of it keeps the variable
names and never a value: any variable may hold a credential, and which process's file is read (the
daemon's, ripgrep's, the shell's) decides what is in it.
"""

from __future__ import annotations

import os
import re

MARK = "[REDACTED:env-dump]"
_ENVIRON = re.compile(r"^/proc/(?:[^/]+/)*environ$")
_NAME_VALUE = re.compile(r"([A-Za-z_][A-Za-z0-9_.%-]*=)[^\x00\n]*")


def is_environ_file(path: str | os.PathLike[str]) -> bool:
    """True for any path that names a process's environment file, in any spelling."""
    for form in (os.path.normpath(os.fspath(path)), os.path.realpath(path)):
        if _ENVIRON.match(form):
            return True
    return False


def mask_values(text: str) -> tuple[str, int]:
    """Every ``NAME=value`` in ``text`` (NUL- or line-separated) as ``NAME=[REDACTED:env-dump]``; anything
    else on a line that is not such a pair is masked whole (a value that spans lines)."""
    hits = 0
    out = []
    for segment in re.split(r"([\x00\n])", text):
        if segment in ("\x00", "\n") or not segment:
            out.append(segment)
            continue
        m = _NAME_VALUE.match(segment)
        out.append(m.group(1) + MARK if m else MARK)
        hits += 1
    return "".join(out), hits
