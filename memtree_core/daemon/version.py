"""Which install a daemon or forwarder runs, so a forwarder can tell that the daemon is from an older one.

Its own module (stdlib only) because both the daemon (``daemon.main``) and the code that starts it
(``daemon.control``) need it, and ``control`` imports ``main`` to run the daemon.
"""

from __future__ import annotations

import os
import sys

_PACKAGES = ("memtree_core", "memtree_plugins")


def code_version() -> str:
    """``<__version__>+<checksum>`` of what pip installed: the packages' ``__init__`` files and memtree's
    ``.dist-info`` (both rewritten by every install, upgrade or ``pip install -e .``), so a forwarder can tell
    that the running daemon came from an older install.

    Ordinary edits in an editable checkout do not count on purpose: several sessions would otherwise restart
    the shared daemon at every saved file.  After editing memtree itself, run ``memtree stop``.
    """
    from memtree_core import __version__

    lines = [f"{mark}:{st.st_mtime_ns}:{st.st_size}\n" for mark, st in _install_marks()]
    # A checksum, not a cryptographic hash: it only tells one install from the next (nobody forges an mtime
    # to fool it).  In Python: hashlib's OpenSSL, or binascii and the zlib it links, would be loaded for it,
    # a real part of the forwarder's start-up; this is a few hundred bytes.
    data = "".join(lines).encode("utf-8", "surrogateescape")
    return f"{__version__}+{fnv1a_32(data):08x}"


def installed_at() -> int:
    """When this install was made (the newest of the files :func:`code_version` reads, in ns; 0 if none).
    Of two installs serving one project, the newer one's daemon stays: see ``memtree_core.forwarder.connect``."""
    return max((st.st_mtime_ns for _mark, st in _install_marks()), default=0)


def _install_marks() -> list[tuple[str, os.stat_result]]:
    """The files every install rewrites, with their stat: the packages' ``__init__`` files and memtree's
    ``RECORD``."""
    from memtree_core import DISTRIBUTION

    # pip names the metadata folder after the normalised distribution name: memtree_mcp-0.1.0.dist-info
    dist_info = DISTRIBUTION.replace("-", "_") + "-"
    # os.path, not pathlib: memtree serve computes this before it imports pathlib (memtree_core.early_answer)
    base = os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__))))
    marks = [os.path.join(base, package, "__init__.py") for package in _PACKAGES]
    # An install from a wheel keeps its .dist-info beside the packages: the rest of sys.path (the standard
    # library's hundreds of names among it) is listed only for an editable install, whose metadata is elsewhere.
    for entry in dict.fromkeys([base, *filter(None, sys.path)]):
        try:
            names = os.listdir(entry)
        except OSError:
            continue
        found = [os.path.join(entry, n, "RECORD") for n in names
                 if n.startswith(dist_info) and n.endswith(".dist-info")]
        marks += found
        if found and entry == base:
            break
    out = []
    for mark in marks:
        try:
            out.append((mark, os.stat(mark)))
        except OSError:
            continue
    return out


def fnv1a_32(data: bytes) -> int:
    """The 32-bit FNV-1a checksum of ``data``."""
    h = 0x811C9DC5
    for byte in data:
        h = ((h ^ byte) * 0x01000193) & 0xFFFFFFFF
    return h
