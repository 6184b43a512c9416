"""The ingest socket: Claude Code hook payloads in, redacted ``pending`` nodes out (spec §7, DESIGN.md §6–§7).

Where the socket is
    ``$MEMTREE_HOME/<project-hash>/ingest.sock`` (``ProjectPaths.ingest_socket``).  When that path is longer than
    a Unix socket path may be (sun_path: 108 bytes on Linux, 104 on macOS) it falls back to
    ``$XDG_RUNTIME_DIR/memtree/<hash>-ingest.sock`` or ``/tmp/memtree-<uid>/<hash>-ingest.sock``, in a 0700
    directory.  The socket is created under umask 0o177, so it is 0600 from its first instant.

How the hook finds it without git
    The project hash needs git (first commit), which the hook cannot afford on every tool call.  So ``bind``
    (and ``serve`` again, in case the caller did not pass the root) registers the project root as a symlink

        $MEMTREE_HOME/roots/<absolute root>/.ingest.sock  ->  <the real socket>

    — a mirror of the root's path under ``roots/`` (its physical path too, when it differs).  The hook walks up
    from ``CLAUDE_PROJECT_DIR`` testing ``roots$dir/.ingest.sock`` with shell builtins only (no hashing, no
    fork), ``cd``s into that directory and connects to the relative name, so neither the mirror's length nor
    the home's length can hit the socket path limit.  The links outlive the daemon on purpose: a later daemon
    binds the same path, and a link to a dead socket is how the hook knows "memtree is used here, no daemon
    runs" (a counted drop) as opposed to "not a memtree project" (also a drop; different reason).

Protocol
    One connection per capture: the client sends the raw Claude Code payload (one JSON document) and shuts
    down its write side; the server validates, applies ``capture.bash`` and the command denylist, redacts
    (content and metadata) BEFORE anything is written, inserts the ``pending`` node(s), commits, and only then
    answers one line: ``{"ok":true,"ids":[...]}`` or ``{"ok":false,"reason":"..."}``.  An ack therefore means
    "committed" (WAL; survives SIGKILL of the daemon).

    Replacement (issue 8, ``memtree_core.replace``): a payload preceded by the line ``MEMTREE-REPLACE 1``
    is captured the same way; after the ack line the server writes the synchronous hook's stdout (one JSON
    line with ``updatedToolOutput``) or nothing, then closes.  Old clients never send that line, and a
    payload cannot start with it, so the extension is compatible both ways.

    One node per tool call: the async capture hook and the sync replacement hook both send the same payload
    for a Bash or Grep call.  The first to arrive stores it; the other waits for that and reuses its ids
    (keyed by ``tool_use_id``, event and a hash of the output; counted ``capture:deduplicated``).

Faults
    A connection may send at most :data:`MAX_PAYLOAD_BYTES` within :data:`READ_DEADLINE_S`; more is refused
    (``oversized``/``timeout``) without reading on.  Content bigger than ``capture.maxBytes`` is not refused:
    the store cuts it and marks ``truncated``/``original_bytes``.  Malformed JSON, binary and non-UTF-8 input
    are dropped.  Every drop bumps ``capture:dropped:<reason>`` and logs one line without content.  Each
    connection runs on its own thread (at most :data:`MAX_CONNECTIONS`), so a slow client stalls nobody.
    Only the socket's owner may connect: 0600 plus a ``SO_PEERCRED`` uid check where the OS offers it.

Idle tracking
    :func:`last_activity` returns the ``time.monotonic()`` of the latest accepted connection in this process
    (the daemon's idle timeout reads it).

``bind`` is stdlib-only and cheap: the daemon calls it before its heavy imports so no capture is lost at boot.
"""

from __future__ import annotations

import errno
import json
import logging
import os
import socket
import struct
import threading
import time
from pathlib import Path
from typing import Any

from memtree_core.hook_sender import write_sender_file
from memtree_core.project import ProjectPaths

log = logging.getLogger("memtree.ingest")

MAX_PAYLOAD_BYTES = 32 * 1024 * 1024  # a Read of a huge file or a long Bash log; beyond this is not a capture
READ_DEADLINE_S = 30.0  # whole-payload deadline per connection
RECV_TIMEOUT_S = 5.0  # silence allowed between two reads
MAX_CONNECTIONS = 32  # concurrent handler threads; more get {"ok":false,"reason":"busy"}
ROOT_LINK_NAME = ".ingest.sock"
# Which sender the hooks run, one field per line (paths may hold spaces): kind ("nc"/"perl"/"python"),
# program, and for python the send.py compiled by that interpreter (may be empty); then the same three for
# the replacement hook (perl or python).

_last_activity = time.monotonic()


def last_activity() -> float:
    """``time.monotonic()`` of the latest connection this process accepted (import time before any)."""
    return _last_activity


def _touch() -> None:
    global _last_activity
    _last_activity = time.monotonic()


# -- where things are ---------------------------------------------------------------------------------------
def roots_dir(home: Path) -> Path:
    return home / "roots"


def root_link(home: Path, root: Path | str) -> Path:
    """The symlink the hook looks for: ``$MEMTREE_HOME/roots/<absolute root>/.ingest.sock``."""
    rel = os.path.abspath(root).lstrip("/")
    return roots_dir(home) / rel / ROOT_LINK_NAME


def register_root(paths: ProjectPaths, root: Path | str) -> None:
    """Point the hook at this project's socket from ``root`` (and its physical path, if different)."""
    target = str(paths.ingest_socket)
    for form in dict.fromkeys((os.path.abspath(root), os.path.realpath(root))):
        link = root_link(paths.home, form)
        try:
            if os.readlink(link) == target:
                continue
        except OSError:
            pass
        try:
            link.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            tmp = link.with_name(f"{ROOT_LINK_NAME}.{os.getpid()}.tmp")
            tmp.unlink(missing_ok=True)
            os.symlink(target, tmp)
            os.replace(tmp, link)  # atomic: a hook never sees a half-made link
        except OSError as exc:
            log.warning("cannot register %s for the capture hook (%s); captures there will be dropped", form, exc)


# -- binding --------------------------------------------------------------------------------------------------
def bind(paths: ProjectPaths, root: Path | str | None = None) -> socket.socket:
    """Bind and listen on the project's ingest socket (0600). The caller holds the daemon lock.

    ``root``: the project root, registered for the hook (see module doc); ``serve`` registers
    ``app.identity.root`` too, so passing it here only matters for captures sent during boot.
    """
    paths.ensure()
    path = paths.ingest_socket
    path.unlink(missing_ok=True)  # only the lock holder gets here, so whatever is there is stale
    old = os.umask(0o177)
    try:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.bind(str(path))
        except OSError:
            sock.close()
            raise
    finally:
        os.umask(old)
    os.chmod(path, 0o600)
    sock.listen(128)
    if root is not None:
        register_root(paths, root)
    return sock


# -- serving --------------------------------------------------------------------------------------------------
class Refused(Exception):
    """A capture that is dropped; ``reason`` is short and stable (it names a counter)."""

    def __init__(self, reason: str, counted: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.counted = counted  # the same tool call was already refused (and counted) once


def peer_uid(conn: socket.socket) -> int | None:
    so_peercred = getattr(socket, "SO_PEERCRED", None)
    if so_peercred is None:
        return None  # macOS/BSD: the 0600 socket in a 0700 directory is the guard
    try:
        _pid, uid, _gid = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, so_peercred, struct.calcsize("3i")))
    except OSError:
        return None
    return uid


def read_payload(conn: socket.socket, limit: int | None = None, deadline_s: float | None = None) -> bytes:
    """Everything the client sends until it shuts down its write side, within the size and time bounds."""
    limit = MAX_PAYLOAD_BYTES if limit is None else limit
    deadline_s = READ_DEADLINE_S if deadline_s is None else deadline_s
    conn.settimeout(RECV_TIMEOUT_S)
    end = time.monotonic() + deadline_s
    chunks: list[bytes] = []
    size = 0
    while True:
        if time.monotonic() > end:
            raise Refused("timeout")
        try:
            chunk = conn.recv(1 << 20)
        except TimeoutError:
            raise Refused("timeout") from None
        if not chunk:
            return b"".join(chunks)
        size += len(chunk)
        if size > limit:
            raise Refused("oversized")
        chunks.append(chunk)


def decode_payload(raw: bytes) -> dict[str, Any]:
    if not raw.strip():
        raise Refused("empty-payload")
    if b"\x00" in raw:
        raise Refused("binary")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise Refused("not-utf8") from None
    try:
        value = json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        raise Refused("malformed-json") from None
    if not isinstance(value, dict):
        raise Refused("not-an-object")
    return value


def _clean(text: str) -> str:
    """Lone surrogates (legal in JSON escapes, illegal in UTF-8) would make SQLite refuse the row."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogatepass").decode("utf-8", "replace")


MAX_CLAIMS = 4096  # recent tool calls remembered for deduplication (the two hooks arrive within seconds)


class _Claim:
    """One tool call being (or having been) stored: the second sender waits on ``done``."""

    def __init__(self) -> None:
        self.done = threading.Event()
        self.ids: list[str] | None = None  # None: the first attempt failed, the next sender stores it
        self.refused: str | None = None  # the first attempt was refused (denylist, empty...): so is this one
        self.truncated = False


def _call_key(payload: dict[str, Any]) -> str:
    """Same tool call, same output: the id alone would merge two calls of a client that reuses ids."""
    import hashlib

    output = payload.get("tool_response", payload.get("error"))
    digest = hashlib.blake2b(json.dumps(output, sort_keys=True, ensure_ascii=False).encode("utf-8", "replace"),
                             digest_size=16).hexdigest()
    return f"{payload.get('tool_use_id')}\x00{payload.get('hook_event_name')}\x00{digest}"


class IngestServer:
    """Turns one connection into committed ``pending`` nodes (or a counted drop)."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.uid = os.getuid()
        # Recent tool calls (see "One node per tool call" above), oldest first.
        self._claims: dict[str, _Claim] = {}
        self._claims_lock = threading.Lock()

    def handle(self, conn: socket.socket) -> dict[str, Any]:
        """Serve one connection fully; return the ack it sent."""
        started = time.monotonic()
        tool = "?"
        size = 0
        wants_reply = False
        payload: dict[str, Any] = {}
        truncated = False
        try:
            uid = peer_uid(conn)
            if uid is not None and uid != self.uid:
                raise Refused("peer-uid")
            raw = read_payload(conn)
            size = len(raw)
            from memtree_core.replace import split_request

            wants_reply, raw = split_request(raw)
            payload = decode_payload(raw)
            tool = payload.get("tool_name") if payload.get("tool_name") in ("Read", "Grep", "Bash") else "?"
            ids, truncated = self.ingest_once(payload)
            ack: dict[str, Any] = {"ok": True, "ids": ids}
        except Refused as exc:
            if not exc.counted:
                self._count_drop(exc.reason, tool, size)
            ack = {"ok": False, "reason": exc.reason}
        except Exception as exc:  # the store or a plugin failed: drop this one, keep serving
            log.exception("capture failed (tool=%s, %d bytes)", tool, size)
            self._count_drop(f"error:{type(exc).__name__}", tool, size)
            ack = {"ok": False, "reason": "error"}
        line = (json.dumps(ack) + "\n").encode()
        if wants_reply and ack["ok"] and len(ack["ids"]) == 1:
            self._reply(conn, line, payload, ack["ids"][0], truncated)
        else:
            try:
                conn.sendall(line)
            except OSError:
                pass  # the client gave up; the capture (if any) is committed either way
        log.debug("capture %s tool=%s bytes=%d in %.1f ms", "ok" if ack["ok"] else ack["reason"], tool, size,
                  (time.monotonic() - started) * 1000)
        return ack

    def _reply(self, conn: socket.socket, ack: bytes, payload: dict[str, Any], node_id: str,
               truncated: bool) -> None:
        """Ack, then the replacement (or nothing); count savings only once a waiting hook got them."""
        from memtree_core import replace

        outcome = replace.build(self.app, payload, node_id, truncated=truncated)
        try:
            conn.sendall(ack + replace.reply_bytes(outcome))
            conn.shutdown(socket.SHUT_WR)
        except OSError:
            # The hook gave up (its timeout) before the answer: the model got the original output.
            self._bump("replace:untouched:hook-gone")
            return
        if outcome.output is None:
            replace.count_pass(self.app, outcome)
            return
        try:
            replace.account(self.app, outcome)
        except Exception:
            log.exception("cannot count a replacement")

    def _bump(self, name: str) -> None:
        try:
            self.app.store.bump(name)
        except Exception:
            log.exception("cannot bump %s", name)

    def ingest_once(self, payload: dict[str, Any], replayed: bool = False) -> tuple[list[str], bool]:
        """:meth:`ingest`, once per tool call: a second sender of the same call gets the first one's ids.

        Returns the ids and whether the store had to cut the (single) node's content.  ``replayed``: the
        payload was rebuilt from a session transcript (memtree_core.backfill), not sent by a hook.
        """
        key = _call_key(payload)
        with self._claims_lock:
            claim = self._claims.get(key)
            mine = claim is None or (claim.done.is_set() and claim.ids is None)
            if mine:
                claim = self._claims[key] = _Claim()
                while len(self._claims) > MAX_CLAIMS:
                    self._claims.pop(next(iter(self._claims)))
        assert claim is not None
        if not mine:
            claim.done.wait(READ_DEADLINE_S)
            if claim.ids is not None:
                self._bump("capture:deduplicated")
                return claim.ids, claim.truncated
            if claim.refused is not None:
                raise Refused(claim.refused, counted=True)
            if not claim.done.is_set():
                raise Refused("timeout")
            return self.ingest_once(payload, replayed)  # the first attempt failed on an error: try again
        try:
            try:
                ids = self.ingest(payload, replayed)
            except Refused as exc:
                claim.refused = exc.reason
                raise
            truncated = False
            if len(ids) == 1:
                row = self.app.store.query_one("SELECT truncated FROM nodes WHERE id = ?", (ids[0],))
                truncated = bool(row and row[0])
            claim.ids, claim.truncated = ids, truncated
            return ids, truncated
        finally:
            claim.done.set()

    def _count_drop(self, reason: str, tool: str, size: int) -> None:
        log.info("capture dropped: %s (tool=%s, %d bytes)", reason, tool, size)
        try:
            self.app.store.bump(f"capture:dropped:{reason}")
        except Exception:
            log.exception("cannot count a dropped capture")

    def ingest(self, payload: dict[str, Any], replayed: bool = False) -> list[str]:
        from memtree_core.backfill import note_replayed, stored_twin
        from memtree_core.denylist import command_denied
        from memtree_core.payloads import Capture, bash_command, to_captures

        app = self.app
        settings = app.settings.capture
        if payload.get("tool_name") == "Bash":
            if not settings.bash:
                raise Refused("bash-disabled")
            command = bash_command(payload)
            if command:
                why = command_denied(command, app.paths.bash_deny)
                if why:
                    raise Refused("denied:" + why.split(":", 1)[0])
        result = to_captures(payload, max_bytes=settings.max_bytes)
        if not isinstance(result, list):
            raise Refused(result.reason)
        hits: dict[str, int] = {}
        clean: list[Capture] = []
        for cap in result:
            content = self._redact(_clean(cap.content), hits)
            if "\x00" in content:
                raise Refused("binary-content")
            meta = {k: self._redact(_clean(v), hits) if isinstance(v, str) else v for k, v in cap.metadata.items()}
            clean.append(Capture(cap.kind, content, cap.source_uri and _clean(cap.source_uri), cap.mtime, meta,
                                 cap.original_bytes))
        store = app.store
        ids: list[str] = []
        with store.tx():
            # A call taken from a transcript and the same call from a hook (late, or never acked) are one.
            twin = stored_twin(app, payload, replayed)
            if twin:
                store.bump("capture:deduplicated")
                return twin
            for cap in clean:
                node = store.insert_node(cap.kind, cap.content, source_uri=cap.source_uri, status_="pending",
                                         mtime=cap.mtime, metadata=cap.metadata)
                if cap.original_bytes and cap.original_bytes > node.original_bytes:
                    # The text came cut from a persisted output file: keep the real size and the mark.
                    store.conn.execute("UPDATE nodes SET truncated = 1, original_bytes = ? WHERE id = ?",
                                       (cap.original_bytes, node.id))
                ids.append(node.id)
            app.record_redactions(hits)
            store.bump(f"capture:accepted:{payload.get('tool_name')}", len(ids))
            if replayed:
                note_replayed(app, payload, ids)
        return ids

    def _redact(self, text: str, hits: dict[str, int]) -> str:
        text, found = self.app.redact(text)
        for rule, n in found.items():
            hits[rule] = hits.get(rule, 0) + n
        return text


def serve(sock: socket.socket, app: Any, stop: threading.Event) -> None:
    """Accept captures until ``stop`` is set (blocking; the daemon runs it in a thread).

    On return the listening socket is closed and its path removed (if it is still ours); captures in flight
    are given :data:`READ_DEADLINE_S` to finish, so none that was acked or about to be is cut off.
    """
    try:
        bound_path = sock.getsockname()
        bound_ino = os.stat(bound_path).st_ino if bound_path else None
    except OSError:
        bound_path, bound_ino = None, None
    try:
        register_root(app.paths, app.identity.root)
        write_sender_file(app.paths.home, app.environ)
        from memtree_core.replace import warm_up, write_flag

        write_flag(app)
        if app.settings.capture.replace.enabled:
            # The sync hook waits at most timeoutMs: the first replacement must not pay for opening the
            # store and compiling the redaction rules.
            threading.Thread(target=warm_up, args=(app,), name="memtree-replace-warmup", daemon=True).start()
    except Exception:
        log.exception("cannot register the project for the capture hook")
    server = IngestServer(app)
    slots = threading.BoundedSemaphore(MAX_CONNECTIONS)
    workers: set[threading.Thread] = set()
    sock.settimeout(0.25)

    def run(conn: socket.socket) -> None:
        try:
            server.handle(conn)
        finally:
            conn.close()
            slots.release()
            workers.discard(threading.current_thread())

    try:
        while not stop.is_set():
            try:
                conn, _ = sock.accept()
            except TimeoutError:
                continue
            except OSError as exc:
                if exc.errno in (errno.EINTR, errno.ECONNABORTED, errno.EMFILE, errno.ENFILE):
                    time.sleep(0.05)
                    continue
                return  # the socket was closed under us: the daemon is stopping
            _touch()
            conn.setblocking(True)
            if not slots.acquire(blocking=False):
                server._count_drop("busy", "?", 0)
                try:
                    conn.sendall(b'{"ok":false,"reason":"busy"}\n')
                except OSError:
                    pass
                conn.close()
                continue
            worker = threading.Thread(target=run, args=(conn,), name="memtree-ingest-conn", daemon=True)
            workers.add(worker)
            worker.start()
    finally:
        sock.close()
        end = time.monotonic() + READ_DEADLINE_S
        for worker in list(workers):
            worker.join(max(0.0, end - time.monotonic()))
        if bound_path and bound_ino is not None:
            try:
                if os.stat(bound_path).st_ino == bound_ino:
                    os.unlink(bound_path)
            except OSError:
                pass
