"""The first thing ``memtree serve`` does: answer the agent's ``initialize`` from the recorded handshake,
before importing the rest of the forwarder.

Everything the answer needs is known without git, sockets, pathlib or the json package (whose ``re``
import alone costs as much as the rest; :mod:`memtree_core.quick_json`) when the project's identity is
remembered (:mod:`memtree_core.identity_cache`) and the daemon's record matches
(:mod:`memtree_core.handshake_cache`): those imports (~6 ms, a third of what the forwarder adds to the
interpreter's own start) then come after the answer.  The forwarder takes over from what this found
(:func:`memtree_core.forwarder.main`): it replays the ``initialize`` to the daemon, checks its answer
against the one given and holds everything else until then, as it does for an answer it gave itself.

Anything unusual -- an identity not remembered, a path pathlib would spell otherwise, no record or one that
does not match, a first line that is not such an ``initialize`` -- and nothing is answered here; what was
read from the agent is handed over untouched.
"""

from __future__ import annotations

import os

from memtree_core import handshake_cache, identity_cache, quick_json
from memtree_core.daemon.version import code_version

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing on memtree serve's start-up path
if TYPE_CHECKING:
    from typing import Any

READ_CHUNK = 1 << 16


class Early:
    """What happened before the forwarder was imported.

    ``read``: bytes taken from the agent (the forwarder reads on from there).  When ``initialize`` was
    answered: ``record``, ``protocol``, ``text`` (the result given, JSON text) and ``message`` (the agent's
    ``initialize``); ``identity`` is then ``(hash, root)``.  ``gone``: the agent closed stdin first."""

    def __init__(self) -> None:
        self.read = bytearray()
        self.identity: tuple[str, str] | None = None
        self.version: str | None = None
        self.record: handshake_cache.Handshake | None = None
        self.protocol: Any = None
        self.text: str | None = None
        self.message: dict[str, Any] | None = None
        self.gone = False


def project_dir(project: str | None) -> str:
    """The directory to serve: ``--project``, else ``$CLAUDE_PROJECT_DIR``, else the working directory.

    A client that passes ``--project ${CLAUDE_PROJECT_DIR}`` without expanding it (reported for some Claude
    Code versions) would otherwise name a directory that does not exist; the launcher's working directory
    can be the plugin's own, so the variable is the better guess.
    """
    if project and "${" not in project:
        return project
    return os.environ.get("CLAUDE_PROJECT_DIR") or os.getcwd()


def as_pathlib_would(path: str) -> str | None:
    """``str(Path(path).expanduser().absolute())`` without importing pathlib, or None where the two might
    differ (``..``, a leading ``//``): the forwarder then works it out with pathlib itself."""
    path = os.path.expanduser(path)
    if not os.path.isabs(path):
        path = os.path.join(os.getcwd(), path)
    if path.startswith("//") and not path.startswith("///"):
        return None
    parts = [p for p in path.split("/") if p not in ("", ".")]
    if ".." in parts:
        return None
    return "/" + "/".join(parts)


def home_dir() -> str | None:
    """:func:`memtree_core.project.memtree_home` as a string, or None where it cannot be said the same way."""
    home = os.environ.get("MEMTREE_HOME")
    return as_pathlib_would(home) if home else as_pathlib_would(os.path.join(os.path.expanduser("~"), ".memtree"))


def answer(project: str | None, stdin: int = 0, stdout: int = 1) -> Early:
    """Answer ``initialize`` from the record when everything matches; see :class:`Early`."""
    early = Early()
    if os.sep != "/":
        return early
    home, workspace = home_dir(), as_pathlib_would(project_dir(project))
    if home is None or workspace is None:
        return early
    known = identity_cache.lookup(home, workspace)
    if known is None:
        return early
    early.version = code_version()
    record, _why = handshake_cache.load(os.path.join(home, known[0]), early.version)
    if record is None:
        return early  # the forwarder looks again, and says why it waits
    while b"\n" not in early.read:
        data = os.read(stdin, READ_CHUNK)
        if not data:
            early.gone = True
            return early
        early.read += data
    first = bytes(early.read).partition(b"\n")[0]
    msg = handshake_cache.initialize_request(first)
    protocol = msg["params"]["protocolVersion"] if msg is not None else None
    text = record.text(protocol, "initialize")
    rid = quick_json.dumps_id(msg["id"]) if msg is not None else None
    if text is None or rid is None:
        return early  # not a handshake the record answers as the daemon would: the daemon answers it
    del early.read[:len(first) + 1]
    reply = b'{"jsonrpc":"2.0","id":' + rid + b',"result":' + text.encode() + b"}\n"
    try:
        view = memoryview(reply)
        while view:
            view = view[os.write(stdout, view):]
    except OSError:
        early.gone = True  # the agent is gone
        return early
    early.identity = (known[0], known[1])
    early.record, early.protocol, early.text, early.message = record, protocol, text, msg
    return early
