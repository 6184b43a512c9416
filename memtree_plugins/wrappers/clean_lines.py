"""Lines of a file as they read after the whole file is redacted: what ``grep`` shows and stores.

A grep hit is a line or a few; redacted on its own, a line of a key's body (or a value on the line
after its YAML key) has nothing that marks it as secret.  So each file with hits is read and redacted
whole, once per search, and a hit line is taken from that redacted text (redaction keeps line numbers,
see :mod:`memtree_core.daemon.redacting`).  When the file cannot be used — too big for the per-search byte
budget, unreadable, binary, or changed since the search read it (its line no longer matches) — the
caller falls back to redacting the file's hit blocks together.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from typing import TYPE_CHECKING

from memtree_plugins.lib.lines import split_lines
from memtree_plugins.lib.masking.environ_files import is_environ_file, mask_values

if TYPE_CHECKING:
    from memtree_core.context import Context

FILE_BYTES = 4 * 1024 * 1024  # a single file larger than this is not redacted whole for a grep
SEARCH_BYTES = 64 * 1024 * 1024  # all files redacted whole for one search, together


class CleanLines:
    """Per-search cache: path -> the file's redacted lines (without line endings), or None."""

    def __init__(self, app: Context, root: str) -> None:
        self.app = app
        self.root = root
        self.budget = SEARCH_BYTES
        self.raw: dict[str, list[str] | None] = {}
        self.clean: dict[str, list[str]] = {}
        self.environ: dict[str, bool] = {}

    def _load(self, path: str) -> list[str] | None:
        if path in self.raw:
            return self.raw[path]
        lines = None
        full = os.path.join(self.root, path)
        try:
            fd = os.open(full, os.O_RDONLY | os.O_NONBLOCK)  # a FIFO must not hang the search
            try:
                st = os.fstat(fd)
                # /proc files report size 0; they are read to the bound below like any small file.
                if stat.S_ISREG(st.st_mode) and st.st_size <= min(FILE_BYTES, self.budget):
                    with os.fdopen(fd, "rb", closefd=False) as fh:
                        data = fh.read(FILE_BYTES + 1)
                    if len(data) <= min(FILE_BYTES, self.budget) and b"\x00" not in data:
                        self.budget -= len(data)
                        text = data.decode("utf-8", "replace")
                        done = self.app.redact_lines(text)
                        lines = [ln.rstrip("\r\n") for ln in split_lines(text)]
                        self.clean[path] = [ln.rstrip("\r\n") for ln in split_lines(done.text)]
                        if len(self.clean[path]) != len(lines):
                            lines = None
            finally:
                os.close(fd)
        except OSError:
            lines = None
        self.raw[path] = lines
        return lines

    def line(self, path: str, number: int, shown: str, clip: Callable[[str], str]) -> str | None:
        """The redacted text of line ``number`` of ``path`` if the search saw that line as it is on
        disk now (``shown``: the engine's text, cut by ``clip``); None to fall back.  A process's
        environment file keeps its names only, whoever's it was (see :mod:`memtree_plugins.lib.masking.environ_files`)."""
        if path not in self.environ:
            self.environ[path] = is_environ_file(os.path.join(self.root, path))
        if self.environ[path]:
            return mask_values(shown)[0]
        raw = self._load(path)
        if raw is None or not 1 <= number <= len(raw):
            return None
        if clip(raw[number - 1]) != shown:
            return None
        return clip(self.clean[path][number - 1])
