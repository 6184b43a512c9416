"""The first thing ``memtree serve`` does: answer the agent's ``initialize`` from the daemon's recorded
handshake, before importing the rest of the forwarder (json, pathlib, socket: a third of what it adds to the
interpreter's start), when the project's identity is remembered and the record matches in every way.
Otherwise nothing is answered and what was read is handed to :mod:`.main`, which tries again once it knows
the identity.  Either way the forwarder replays the ``initialize`` to the daemon and checks its answer.
"""

from __future__ import annotations

import os

from memtree_core.forwarder import records
from memtree_core.forwarder.jsonfiles import dumps_id

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing on memtree serve's start-up path
if TYPE_CHECKING:
    from typing import Any


class Early:
    """What happened before the forwarder was imported.  ``read``: bytes taken from the agent; when
    ``initialize`` was answered: ``record``, ``protocol``, ``text`` (the result given) and ``message`` (the
    agent's request), and ``identity`` is ``(hash, root)``.  ``gone``: the agent left first."""

    def __init__(self) -> None:
        self.read = bytearray()
        self.identity: tuple[str, str] | None = None
        self.version: str | None = None
        self.record: records.Handshake | None = None
        self.protocol: Any = None
        self.text: str | None = None
        self.message: dict[str, Any] | None = None
        self.gone = False
        self.why = ""  # why the record was not used


def project_dir(project: str | None) -> str:
    """``--project``, else ``$CLAUDE_PROJECT_DIR`` (a client may pass ``${CLAUDE_PROJECT_DIR}`` unexpanded),
    else the working directory."""
    if project and "${" not in project:
        return project
    return os.environ.get("CLAUDE_PROJECT_DIR") or os.getcwd()


def as_pathlib_would(path: str) -> str | None:
    """``str(Path(path).expanduser().absolute())`` without pathlib, or None where they might differ."""
    path = os.path.expanduser(path)
    if not os.path.isabs(path):
        path = os.path.join(os.getcwd(), path)
    parts = [p for p in path.split("/") if p not in ("", ".")]
    if (path.startswith("//") and not path.startswith("///")) or ".." in parts:
        return None
    return "/" + "/".join(parts)


def home_dir() -> str | None:
    home = os.environ.get("MEMTREE_HOME")
    return as_pathlib_would(home) if home else as_pathlib_would(os.path.join(os.path.expanduser("~"), ".memtree"))


def answer_from_record(early: Early, directory: str, stdin: int = 0, stdout: int = 1) -> bool:
    """Answer the agent's first line from ``directory``'s record when it is an ``initialize`` the record
    answers as the daemon would; else False (``early.why`` says why when the record could not be used)."""
    early.version = early.version or records.code_version()
    record, early.why = records.load_handshake(directory, early.version)
    while record is not None and b"\n" not in early.read:
        data = os.read(stdin, 1 << 16)
        early.read += data
        early.gone = not data
        if early.gone:
            return False
    first = bytes(early.read).partition(b"\n")[0]
    msg = records.initialize_request(first) if record is not None else None
    protocol = msg["params"]["protocolVersion"] if msg is not None else None
    text = record.text(protocol, "initialize") if record is not None else None
    rid = dumps_id(msg["id"]) if msg is not None else None
    if text is None or rid is None:
        return False
    del early.read[:len(first) + 1]
    view = memoryview(b'{"jsonrpc":"2.0","id":' + rid + b',"result":' + text.encode() + b"}\n")
    try:
        while view:
            view = view[os.write(stdout, view):]
    except OSError:
        early.gone = True  # the agent is gone
        return False
    early.record, early.protocol, early.text, early.message = record, protocol, text, msg
    return True


def answer(project: str | None, stdin: int = 0, stdout: int = 1) -> Early:
    """Answer ``initialize`` from the record when the identity is remembered and everything matches."""
    early = Early()
    home, workspace = home_dir(), as_pathlib_would(project_dir(project))
    known = records.lookup(home, workspace) if home is not None and workspace is not None else None
    if known is not None and answer_from_record(early, os.path.join(home, known[0]), stdin, stdout):  # type: ignore[arg-type]
        early.identity = (known[0], known[1])
    return early
