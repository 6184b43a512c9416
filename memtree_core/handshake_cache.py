"""The daemon's recorded handshake, so ``memtree serve`` can answer ``initialize`` before any daemon runs.

A daemon, once its tools are registered, asks itself ``initialize`` and ``tools/list`` for every protocol
version it speaks, through the same code path a session uses, and writes the answers to ``handshake.json``
in the project's directory (0600, atomically).  A forwarder that finds no daemon answers the agent's
``initialize`` from that file -- at Python's own start-up speed, without the SDK import -- then starts the
daemon, replays the ``initialize`` to it and checks the daemon's answer against the one it gave.

The file is trusted only when everything matches: a regular file owned by this user, no access for others,
the installed code version, the protocol version the client asked for.  Anything else and the forwarder
waits for the daemon as it always did.

Stdlib only, without pathlib or the json package (:mod:`memtree_core.quick_json`): ``memtree serve``
answers ``initialize`` from it before importing the rest (:mod:`memtree_core.early_answer`).
"""

from __future__ import annotations

import os

from memtree_core import private_json, quick_json

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing on memtree serve's start-up path
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

CACHE_FILE = "handshake.json"
# 2: each answer is kept as its JSON text (a string), so reading the record does not build the objects of
# every protocol version's tools/list (~120 kB, several ms); only the answer given is parsed, and only later.
FORMAT = 2
MAX_BYTES = 4 << 20  # far above a real answer; a bigger file is not ours


class Handshake:
    """A cache file that passed every check, with the exact bytes read (to invalidate only this one)."""

    def __init__(self, path: str, raw: bytes, answers: dict[str, Any], env: str | None) -> None:
        self.path = path
        self.raw = raw
        self.answers = answers
        self.env = env

    def text(self, protocol: Any, method: str) -> str | None:
        """The recorded ``result`` of ``method`` for a client asking ``protocol``, as JSON text, or None."""
        if not isinstance(protocol, str):
            return None
        entry = self.answers.get(protocol)
        text = entry.get(method) if isinstance(entry, dict) else None
        return text if isinstance(text, str) and text.isascii() else None  # written so: sent as it is

    def result(self, protocol: Any, method: str) -> Any:
        """The recorded ``result`` of ``method`` for a client asking ``protocol``, or None."""
        text = self.text(protocol, method)
        try:
            return None if text is None else quick_json.loads(text)
        except ValueError:
            return None

    def invalidate(self) -> None:
        """Remove the file if it still holds what was read (a newer daemon may have rewritten it since)."""
        try:
            with open(self.path, "rb") as f:
                same = f.read() == self.raw
            if same:
                os.unlink(self.path)
        except OSError:
            pass


# clientInfo's fields the SDK types (``Implementation``); any other key is ignored there, except ``icons``
# (a typed list), which sends the request to the daemon.
_CLIENT_INFO_STRINGS = {"name": True, "version": True, "title": False, "description": False, "websiteUrl": False}


def initialize_request(line: bytes) -> dict[str, Any] | None:
    """The agent's first line as an :func:`answerable` ``initialize``, or None (the daemon answers it).  A
    byte-order mark json would skip is refused here: the daemon's parser does not skip it."""
    if line.startswith(b"\xef\xbb\xbf"):
        return None
    try:
        msg = quick_json.loads(line)  # json.loads, without the json package's imports (see quick_json)
    except ValueError:
        return None
    return msg if answerable(msg) else None


def _utf8(text: str) -> bool:
    """No lone surrogate (json reads ``"\\ud800"`` as one; the daemon's parser replaces it)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def answerable(msg: Any) -> bool:
    """Is ``msg`` an ``initialize`` request the daemon accepts as it is, so that the record's answer is the one
    it would give?  Checked are the fields its SDK types: a JSON-RPC 2.0 envelope, an id that is an integer
    or a string (no lone surrogate: the answer echoes it), ``protocolVersion`` a string, ``capabilities`` an
    object of objects (``roots.listChanged`` a boolean), ``clientInfo`` with a string ``name`` and
    ``version``.  Anything else -- a request the daemon would refuse, ignore or read in some way not checked
    here (``_meta``, icons) -- goes to the daemon unanswered, and the agent gets the daemon's own reply."""
    if not (isinstance(msg, dict) and msg.get("jsonrpc") == "2.0" and msg.get("method") == "initialize"):
        return False
    rid, params = msg.get("id"), msg.get("params")
    if not (type(rid) is int or (type(rid) is str and _utf8(rid))) or not isinstance(params, dict) \
            or "_meta" in params:
        return False
    capabilities, client = params.get("capabilities"), params.get("clientInfo")
    if not (isinstance(params.get("protocolVersion"), str) and isinstance(capabilities, dict)
            and isinstance(client, dict) and "icons" not in client):
        return False
    for key, required in _CLIENT_INFO_STRINGS.items():
        value = client.get(key)
        if not (isinstance(value, str) or (value is None and not required)):
            return False
    for name, capability in capabilities.items():
        if not isinstance(capability, dict):
            return False
        for key, value in capability.items():
            ok = isinstance(value, bool) if (name, key) == ("roots", "listChanged") else isinstance(value, dict)
            if not ok:
                return False
    return True


def environment_mark(environ: dict[str, str] | os._Environ[str] | None = None) -> str:
    """A digest of the ``MEMTREE_*`` variables: they choose plugins and settings, and so the tools listed."""
    import hashlib  # here: only a tools/list answered from the record needs it, not every start
    import json

    env = os.environ if environ is None else environ
    items = sorted((k, v) for k, v in env.items() if k.startswith("MEMTREE_"))
    return hashlib.sha256(json.dumps(items).encode("utf-8", "surrogateescape")).hexdigest()[:16]


def load(directory: str | Path, version: str) -> tuple[Handshake | None, str]:
    """The cache for ``version``, or None and why it was not used (for the log)."""
    path = os.path.join(directory, CACHE_FILE)
    raw, why = private_json.read(path, MAX_BYTES)
    if raw is None:
        return None, "no recorded handshake" if why == private_json.MISSING else why
    try:
        data = quick_json.loads(raw)  # read before memtree serve answers initialize: no json package yet
    except ValueError:
        return None, f"{path} is damaged (not JSON)"
    if not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("answers"), dict):
        return None, f"{path} is damaged (unknown shape)"
    if data.get("version") != version:
        return None, f"{path} was recorded by memtree {data.get('version')}, installed is {version}"
    env = data.get("env")
    return Handshake(path, raw, data["answers"], env if isinstance(env, str) else None), ""


def write(directory: str | Path, version: str, answers: dict[str, dict[str, Any]], env: str) -> None:
    """Record ``answers`` (protocol version -> method -> result) for ``version``: 0600, atomic."""
    import json  # the daemon writes; memtree serve only reads, before it has imported json

    texts = {protocol: {method: json.dumps(result, separators=(",", ":")) for method, result in methods.items()}
             for protocol, methods in answers.items()}
    private_json.write(os.path.join(directory, CACHE_FILE),
                       {"format": FORMAT, "version": version, "env": env, "answers": texts})
