"""Files as the wrapped tools and the repository indexer see them: path resolution and safe loading.

Their source URIs and the unit of ``nodes.mtime`` are the store's one contract,
:mod:`memtree_core.store.source_uri`; the file node's metadata also keeps ``size``.
"""

from __future__ import annotations

import codecs
import os
import stat as stat_module
from dataclasses import dataclass, field
from pathlib import Path

from memtree_core.errors import NotFound
from memtree_core.store.source_uri import mtime as mtime_of

# read() loads the whole file to chunk it; above this it asks for grep or a line-oriented bash command.
MAX_READ_BYTES = 20 * 1024 * 1024


def resolve(root: Path, path: str) -> Path:
    """An absolute, normalised path: ``~`` expanded, relative paths taken against the project root."""
    if not path or not path.strip():
        raise ValueError("path is empty; give a file path, absolute or relative to the project root")
    if not is_utf8(path):
        # A name that is not UTF-8 arrives with lone surrogates (os.fsdecode's form); the store keeps paths
        # as UTF-8 text, so such a file cannot be stored under its own name.
        raise ValueError(f"the path {os.fsencode(path)!r} is not valid UTF-8, and memtree stores paths as UTF-8 "
                         f"text; rename the file, or use bash (e.g. cat -- with a glob)")
    p = Path(path.strip()).expanduser()
    if not p.is_absolute():
        p = root / p
    return Path(os.path.normpath(p))


def is_utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def display(path: Path, root: Path) -> str:
    """The path relative to the project root when inside it (shorter in results), else absolute."""
    try:
        return str(path.relative_to(root))
    except ValueError:
        return str(path)


def stat_file(path: Path, display_path: str) -> os.stat_result:
    """``os.stat`` with the errors a caller can act on: missing, directory, not a regular file."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise NotFound(f"no such file: {display_path} (relative paths start at the project root; "
                       f"check the path with grep or bash 'ls')") from None
    except PermissionError:
        raise ValueError(f"permission denied reading {display_path}") from None
    except OSError as exc:
        raise ValueError(f"cannot stat {display_path}: {exc.strerror or exc}") from None
    if stat_module.S_ISDIR(st.st_mode):
        raise ValueError(f"{display_path} is a directory; read takes a file (list it with bash 'ls', "
                         f"search it with grep)")
    if not stat_module.S_ISREG(st.st_mode):
        raise ValueError(f"{display_path} is not a regular file (a fifo, socket or device); read only "
                         f"takes regular files")
    return st


@dataclass
class LoadedFile:
    text: str
    size: int
    mtime: int
    notes: list[str] = field(default_factory=list)


def looks_binary(data: bytes) -> bool:
    return b"\x00" in data


def load_text(path: Path, display_path: str, max_bytes: int = MAX_READ_BYTES) -> LoadedFile:
    """Read a text file whole.  Binary files are refused; non-UTF-8 text is decoded with replacement
    characters and a note says so (UTF-16 with a byte-order mark is decoded as such)."""
    st = stat_file(path, display_path)
    if st.st_size > max_bytes:
        raise ValueError(f"{display_path} is {st.st_size:,} bytes, over read's {max_bytes:,}-byte limit; "
                         f"use grep to find the part you need, or bash with sed -n 'A,Bp'")
    try:
        with open(path, "rb") as fh:
            data = fh.read(max_bytes + 1)
            st = os.fstat(fh.fileno())
    except PermissionError:
        raise ValueError(f"permission denied reading {display_path}") from None
    except OSError as exc:
        raise ValueError(f"cannot read {display_path}: {exc.strerror or exc}") from None
    notes: list[str] = []
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        text = data.decode("utf-16", errors="replace")
        notes.append("decoded as UTF-16 (byte-order mark)")
    elif looks_binary(data):
        raise ValueError(f"{display_path} looks binary (it contains NUL bytes); read returns text only "
                         f"(inspect it with bash, e.g. 'file' or 'xxd | head')")
    else:
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            text = data.decode("utf-8", errors="replace")
            bad = text.count("\ufffd")
            notes.append(f"not valid UTF-8 (first bad byte at offset {exc.start}); decoded with "
                         f"{bad} replacement character(s) U+FFFD")
    return LoadedFile(text, st.st_size, mtime_of(st), notes)
