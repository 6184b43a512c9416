"""Find the ripgrep binary: the one the ``ripgrep`` wheel put beside this interpreter, else PATH."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path


def find_rg() -> str | None:
    beside = Path(sys.executable).parent / "rg"
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    return shutil.which("rg")
