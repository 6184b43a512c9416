"""The ingest socket: Claude Code hook payloads in, redacted ``pending`` nodes out
(``docs/architecture.md#data-flow-of-a-capture``).

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
    the home's length can hit the socket path limit.  A daemon removes its links when it exits (a link left
    behind would deliver the next capture to whatever listens at that path later); a link to a dead socket
    is what a killed daemon leaves, and the hook counts it as "no-daemon" rather than "no-project".

Who the hook talks to
    Before it sends a byte the hook checks, as ``memtree_core.forwarder.paths`` does at bind: the socket's
    directory is a real directory (not a symlink), the user's, mode 0700; the socket is a socket and the
    user's; and, where the OS offers ``SO_PEERCRED``, the listening peer runs as the user.  Otherwise the
    capture is dropped with reason ``unsafe-dir``, ``unsafe-socket`` or ``peer-uid`` in the drop log.

Protocol
    One connection per capture: the client sends the raw Claude Code payload (one JSON document) and shuts
    down its write side; the server refuses it at once when redaction cannot run, else asks the plugins'
    capture pipeline (``memtree_prepare_capture``: ``capture.bash``, the command policies, the adapters,
    redaction of content and metadata, BEFORE anything is written), has the plugins store the ``pending``
    node(s) (``memtree_store_capture``: one committed transaction), and only then answers one line: ``{"ok":true,"ids":[...]}`` or ``{"ok":false,"reason":"..."}``.  An ack therefore means
    "committed" (WAL; survives SIGKILL of the daemon).

    Replacement (``memtree_core.daemon.replacing``): a payload preceded by the line ``MEMTREE-REPLACE 1``
    is captured the same way; after the ack line the server writes the synchronous hook's stdout (one JSON
    line with ``updatedToolOutput``) or nothing, then closes.  Old clients never send that line, and a
    payload cannot start with it, so the extension is compatible both ways.

    One node per tool call: the async capture hook and the sync replacement hook both send the same payload
    for a Bash or Grep call.  The first to arrive stores it; the other waits for that and reuses its ids
    (keyed by ``tool_use_id``, event and a hash of the output; counted ``capture:deduplicated``).

Faults
    A connection may send at most :data:`MAX_PAYLOAD_BYTES` within :data:`READ_DEADLINE_S`; more is refused
    (``oversized``/``timeout``) without reading on.  Content bigger than ``capture.maxBytes`` is not refused:
    it is cut to a little over that size before redaction (a secret across the cut is still seen) and the
    store marks it ``truncated``/``original_bytes``.  Malformed JSON, binary and non-UTF-8 input are
    dropped.  Every drop bumps ``capture:dropped:<reason>`` and logs one line without content.  Only the
    socket's owner may connect: 0600 plus a ``SO_PEERCRED`` uid check where the OS offers it.

Resource bounds
    Each connection runs on its own thread, at most :data:`MAX_CONNECTIONS` at once.  When all are taken, the
    connection that has sent nothing for longest (at least :data:`EVICT_IDLE_S`, still sending its payload) is
    closed to make room -- a sender that dribbles bytes cannot make the server refuse real captures as
    ``busy``.  Past :data:`BIG_CAPTURE_BYTES`, a connection needs one of :data:`BIG_CAPTURE_SLOTS` slots to
    read on and be stored (the rest wait, unread, in the kernel's socket buffer), so many concurrent huge
    captures cost a bounded amount of memory.  When the daemon stops, connections still sending are closed
    and those being stored get :data:`STOP_GRACE_S` to commit.

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

from memtree_core.daemon.control import bind_private
from memtree_core.daemon.root_links import (
    ELSEWHERE_MARK,
    RESTING_MARK,
    ROOT_LINK_NAME,
    root_link,
    roots_dir,
)
from memtree_core.forwarder.paths import ProjectPaths, ensure_dir

log = logging.getLogger("memtree.ingest")
__all__ = ["ELSEWHERE_MARK", "RESTING_MARK", "ROOT_LINK_NAME", "IngestServer", "Refused", "bind", "root_link",
           "roots_dir", "serve"]

MAX_PAYLOAD_BYTES = 32 * 1024 * 1024  # a Read of a huge file or a long Bash log; beyond this is not a capture
READ_DEADLINE_S = 30.0  # whole-payload deadline per connection
RECV_TIMEOUT_S = 5.0  # silence allowed between two reads
MAX_CONNECTIONS = 32  # concurrent handler threads; beyond, the longest-idle sender is evicted, else "busy"
# A sender silent this long may be evicted when every slot is taken (a real sender writes its payload at once).
EVICT_IDLE_S = 0.25
ACCEPT_WAIT_S = 5.0  # how long a new connection waits for an evicted one's slot before "busy"
BIG_CAPTURE_BYTES = 1 << 20  # past this a connection needs a big-capture slot to read on
BIG_CAPTURE_SLOTS = 2
BIG_SLOT_WAIT_S = 120.0  # a big capture waits at most this long for a slot ("busy" after)
STOP_GRACE_S = 4.0  # captures being stored when the daemon stops get this long to commit

class Refused(Exception):
    """A capture that is dropped; ``reason`` is short and stable (it names a counter)."""

    def __init__(self, reason: str, counted: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.counted = counted  # the same tool call was already refused (and counted) once


_last_activity = time.monotonic()


def last_activity() -> float:
    """``time.monotonic()`` of the latest connection this process accepted (import time before any)."""
    return _last_activity


def _touch() -> None:
    global _last_activity
    _last_activity = time.monotonic()


# -- where things are (memtree_core.daemon.root_links) ---------------------------------------------------------------
def _roots_dir(home: Path) -> Path:
    """``roots/``, 0700 and ours (not a symlink): whoever can write here decides where captures go."""
    home.mkdir(mode=0o700, parents=True, exist_ok=True)
    return ensure_dir(roots_dir(home), tighten=True, what="hook registry")


def _mkdirs_private(top: Path, leaf: Path) -> None:
    """Create ``leaf`` and its parents below ``top``, each 0700 (``mkdir(parents=True)`` would use the umask)."""
    missing: list[Path] = []
    d = leaf
    while d != top and not d.is_dir():
        missing.append(d)
        d = d.parent
    for d in reversed(missing):
        try:
            os.mkdir(d, 0o700)
        except FileExistsError:
            pass


def register_root(paths: ProjectPaths, root: Path | str) -> None:
    """Point the hook at this project's socket from ``root`` (and its physical path, if different).

    Next to the link, ``.sock-elsewhere`` marks a socket outside the project's own directory (a fallback
    socket directory): the shell-only ``nc`` path cannot check that directory, so the hook uses a sender
    that can (see plugin/hooks/capture).
    """
    target = str(paths.ingest_socket)
    elsewhere = paths.ingest_socket.parent != paths.dir
    try:
        top = _roots_dir(paths.home)
    except Exception as exc:
        log.warning("cannot register %s for the capture hook (%s); captures there will be dropped", root, exc)
        return
    for form in dict.fromkeys((os.path.abspath(root), os.path.realpath(root))):
        link = root_link(paths.home, form)
        marker = link.with_name(ELSEWHERE_MARK)
        try:
            _mkdirs_private(top, link.parent)
            if elsewhere and not marker.exists():
                marker.touch(mode=0o600)
            elif not elsewhere:
                marker.unlink(missing_ok=True)
            try:
                if os.readlink(link) == target:
                    continue
            except OSError:
                pass
            tmp = link.with_name(f"{ROOT_LINK_NAME}.{os.getpid()}.tmp")
            tmp.unlink(missing_ok=True)
            os.symlink(target, tmp)
            os.replace(tmp, link)  # atomic: a hook never sees a half-made link
        except OSError as exc:
            log.warning("cannot register %s for the capture hook (%s); captures there will be dropped", form, exc)


def unregister_root(paths: ProjectPaths, root: Path | str) -> None:
    """Remove this project's links (those still pointing at its socket) when its daemon exits: a link left
    behind would send the next capture to whatever listens at that path later.  The project's directory
    under roots/ stays, holding a plain :data:`RESTING_MARK` file that points nowhere: a capture made while
    no daemon runs is then noted in its missed-captures log (ids only, see ``backfill``) and stored by the
    next daemon, instead of being dropped as from an unknown project."""
    from memtree_core.daemon.replacing import FLAG_NAME

    target = str(paths.ingest_socket)
    top = roots_dir(paths.home)
    for form in dict.fromkeys((os.path.abspath(root), os.path.realpath(root))):
        link = root_link(paths.home, form)
        try:
            if os.readlink(link) != target:
                continue
            link.unlink()
        except OSError:
            continue
        for name in (FLAG_NAME, ELSEWHERE_MARK):
            (link.parent / name).unlink(missing_ok=True)
        if top in link.parents:
            mark = os.open(link.parent / RESTING_MARK, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW, 0o600)
            os.close(mark)


# -- binding --------------------------------------------------------------------------------------------------
def bind(paths: ProjectPaths, root: Path | str | None = None) -> socket.socket:
    """Bind and listen on the project's ingest socket (0600). The caller holds the daemon lock.

    ``root``: the project root, registered for the hook (see module doc); ``serve`` registers
    ``app.identity.root`` too, so passing it here only matters for captures sent during boot.
    """
    paths.ensure()
    sock = bind_private(paths.ingest_socket)
    if root is not None:
        register_root(paths, root)
    return sock


# -- serving --------------------------------------------------------------------------------------------------
def peer_uid(conn: socket.socket) -> int | None:
    so_peercred = getattr(socket, "SO_PEERCRED", None)
    if so_peercred is None:
        return None  # macOS/BSD: the 0600 socket in a 0700 directory is the guard
    try:
        _pid, uid, _gid = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, so_peercred, struct.calcsize("3i")))
    except OSError:
        return None
    return uid


class Connection:
    """One capture connection as the server tracks it: when it last sent a byte, whether it is still
    sending (only then may it be evicted), whether it holds a big-capture slot."""

    def __init__(self, sock: socket.socket, big_slots: threading.Semaphore | None = None) -> None:
        self.sock = sock
        self.last_byte = time.monotonic()
        self.sending = True  # still reading its payload (waiting for a big-capture slot included)
        self.waiting = False  # waiting on us for a big-capture slot: not idle on its own account
        self.evicted: str | None = None  # why it was closed under its reader
        self.big_slots = big_slots
        self.holds_big = False

    def evict(self, why: str) -> None:
        self.evicted = why
        try:
            self.sock.shutdown(socket.SHUT_RD)  # its recv() returns at once; the refusal can still be sent
        except OSError:
            pass

    def wait_for_big_slot(self) -> float:
        """Take a big-capture slot; returns the seconds spent waiting.  Gives up (``busy``) after
        :data:`BIG_SLOT_WAIT_S`, or at once when the connection is evicted meanwhile (the daemon stops)."""
        if self.big_slots is None or self.holds_big:
            return 0.0
        start = time.monotonic()
        self.waiting = True
        try:
            while not self.big_slots.acquire(timeout=0.25):
                if self.evicted:
                    raise Refused(self.evicted)
                if time.monotonic() - start > BIG_SLOT_WAIT_S:
                    raise Refused("busy")
        finally:
            self.waiting = False
        self.holds_big = True
        self.last_byte = time.monotonic()  # its silence was ours
        return self.last_byte - start

    def release(self) -> None:
        if self.holds_big and self.big_slots is not None:
            self.holds_big = False
            self.big_slots.release()


def read_payload(conn: socket.socket, limit: int | None = None, deadline_s: float | None = None,
                 track: Connection | None = None) -> bytes | bytearray:
    """Everything the client sends until it shuts down its write side, within the size and time bounds.

    With ``track``: the time of each byte is noted (for eviction), and past :data:`BIG_CAPTURE_BYTES` the
    read waits for a big-capture slot (that wait does not count against the deadline)."""
    limit = MAX_PAYLOAD_BYTES if limit is None else limit
    deadline_s = READ_DEADLINE_S if deadline_s is None else deadline_s
    conn.settimeout(RECV_TIMEOUT_S)
    end = time.monotonic() + deadline_s
    buf = bytearray()
    while True:
        if time.monotonic() > end:
            raise Refused("timeout")
        try:
            chunk = conn.recv(1 << 20)
        except TimeoutError:
            raise Refused("timeout") from None
        except OSError:
            if track is not None and track.evicted:
                raise Refused(track.evicted) from None
            raise
        if track is not None:
            if track.evicted:
                raise Refused(track.evicted)
            track.last_byte = time.monotonic()
        if not chunk:
            return buf  # not copied: a 30 MB capture is held once
        if len(buf) + len(chunk) > limit:
            raise Refused("oversized")
        buf += chunk
        if track is not None and len(buf) > BIG_CAPTURE_BYTES and not track.holds_big:
            end += track.wait_for_big_slot()


def decode_payload(raw: bytes | bytearray) -> dict[str, Any]:
    """The payload as a JSON object.  A ``bytearray`` is emptied once decoded: a 30 MB capture is then held
    as its text or as its parsed value, never as raw bytes, text and value at once."""
    if not raw or raw.isspace():
        raise Refused("empty-payload")
    if b"\x00" in raw:
        raise Refused("binary")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise Refused("not-utf8") from None
    if isinstance(raw, bytearray):
        raw.clear()
    try:
        value = json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        raise Refused("malformed-json") from None
    finally:
        del text
    if not isinstance(value, dict):
        raise Refused("not-an-object")
    return value


MAX_CLAIMS = 4096  # recent tool calls remembered for deduplication (the two hooks arrive within seconds)


class _Claim:
    """One tool call being (or having been) stored: the second sender waits on ``done``."""

    def __init__(self) -> None:
        self.done = threading.Event()
        self.ids: list[str] | None = None  # None: the first attempt failed, the next sender stores it
        self.refused: str | None = None  # the first attempt was refused (denylist, empty...): so is this one
        self.truncated = False


# Keys the in-memory hash of each raw output below: it is never stored, and keyed it says nothing about
# the output to anything that sees it (a heap dump, a log line added later).
_CALL_KEY = os.urandom(32)


def _feed(h: Any, value: Any) -> None:
    """Hash a JSON value in canonical form without building its serialisation (a 30 MB output would be
    copied twice more): strings go in by slices, containers by their items in key order."""
    if isinstance(value, str):
        h.update(b"s%d:" % len(value))
        for i in range(0, len(value), 1 << 20):
            h.update(value[i:i + (1 << 20)].encode("utf-8", "surrogatepass"))
    elif isinstance(value, dict):
        h.update(b"d%d:" % len(value))
        for key in sorted(value, key=str):
            _feed(h, str(key))
            _feed(h, value[key])
    elif isinstance(value, list):
        h.update(b"l%d:" % len(value))
        for item in value:
            _feed(h, item)
    else:
        h.update(b"v" + json.dumps(value).encode() + b";")


def _call_key(payload: dict[str, Any]) -> str:
    """Same tool call, same output: the id alone would merge two calls of a client that reuses ids."""
    import hashlib

    h = hashlib.blake2b(digest_size=16, key=_CALL_KEY)
    _feed(h, payload.get("tool_response", payload.get("error")))
    return f"{payload.get('tool_use_id')}\x00{payload.get('hook_event_name')}\x00{h.hexdigest()}"


class IngestServer:
    """Turns one connection into committed ``pending`` nodes (or a counted drop)."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.uid = os.getuid()
        self.big_slots = threading.BoundedSemaphore(BIG_CAPTURE_SLOTS)
        self.connections: set[Connection] = set()  # open ones, for eviction and for stopping
        self._connections_lock = threading.Lock()
        # Recent tool calls (see "One node per tool call" above), oldest first.
        self._claims: dict[str, _Claim] = {}
        self._claims_lock = threading.Lock()

    def track(self, conn: socket.socket) -> Connection:
        state = Connection(conn, self.big_slots)
        with self._connections_lock:
            self.connections.add(state)
        return state

    def untrack(self, state: Connection) -> None:
        state.release()
        with self._connections_lock:
            self.connections.discard(state)

    def evict_idlest(self, why: str = "evicted") -> bool:
        """Close the connection that has been silent longest while still sending, if one has been silent
        for :data:`EVICT_IDLE_S`; True when one was."""
        now = time.monotonic()
        with self._connections_lock:
            idle = [c for c in self.connections if c.sending and not c.waiting and c.evicted is None
                    and now - c.last_byte >= EVICT_IDLE_S]
            victim = min(idle, key=lambda c: c.last_byte, default=None)
            if victim is None:
                return False
            victim.evict(why)
        return True

    def evict_senders(self, why: str) -> None:
        """Close every connection still sending (the daemon is stopping: none of them was acked)."""
        with self._connections_lock:
            for c in self.connections:
                if c.sending and c.evicted is None:
                    c.evict(why)

    def handle(self, conn: socket.socket, state: Connection | None = None) -> dict[str, Any]:
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
            raw = read_payload(conn, track=state)
            if state is not None:
                state.sending = False
            size = len(raw)
            from memtree_core.daemon.replacing import split_request

            wants_reply, raw = split_request(raw)
            payload = decode_payload(raw)
            tool = _tool_label(self.app, payload.get("tool_name"))
            ids, truncated = self.ingest_once(payload)
            ack: dict[str, Any] = {"ok": True, "ids": ids}
        except Refused as exc:
            if not exc.counted:
                self._count_drop(exc.reason, tool, size)
            ack = {"ok": False, "reason": exc.reason}
        except Exception as exc:  # the store or a plugin failed: drop this one, keep serving
            from memtree_core.store.store import StoreDamaged, is_corruption

            if isinstance(exc, StoreDamaged) or is_corruption(exc):
                # Never ack into a damaged file: the capture would be lost behind an ok.
                log.error("capture refused (tool=%s, %d bytes): %s", tool, size,
                          exc if isinstance(exc, StoreDamaged) else self.app.mark_damaged(exc))
                ack = {"ok": False, "reason": "store-damaged"}
            else:
                log.exception("capture failed (tool=%s, %d bytes)", tool, size)
                self._count_drop(f"error:{type(exc).__name__}", tool, size)
                ack = {"ok": False, "reason": "error"}
        finally:
            if state is not None:
                state.sending = False
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
        from memtree_core.daemon import replacing

        ctx = getattr(self.app, "context", self.app)
        replacer, outcome = replacing.choose(ctx, payload, node_id, truncated=truncated)
        try:
            conn.sendall(ack + replacing.reply_bytes(outcome))
            conn.shutdown(socket.SHUT_WR)
        except OSError:
            # The hook gave up (its timeout) before the answer: the model got the original output.
            self._bump("replace:untouched:hook-gone")
            return
        if outcome.output is None or replacer is None:
            replacing.count_pass(self.app, outcome)
            return
        try:
            replacer.delivered(ctx, outcome)
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
        payload was rebuilt from a session transcript (the ``backfill`` walker), not sent by a hook.
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
        if getattr(self.app, "damaged", None):
            return  # nothing is written to a damaged store, counters included
        try:
            self.app.store.bump(f"capture:dropped:{reason}")
        except Exception:
            log.exception("cannot count a dropped capture")

    def ingest(self, payload: dict[str, Any], replayed: bool = False) -> list[str]:
        """Store one payload as ``pending`` nodes: the plugins' capture pipeline (``memtree_prepare_capture``)
        turns it into redacted captures, then ``memtree_store_capture`` stores them and their counters."""
        from memtree_core.daemon.redaction_gate import RedactionUnavailable
        from memtree_core.types import PreparedCapture

        app = self.app
        if app.redaction_unavailable:
            raise Refused(RedactionUnavailable.reason)  # fails closed: nothing unredacted is stored
        ctx = getattr(app, "context", app)  # what plugins are handed (memtree_core.app.HostContext)
        prepared = app.plugins.pm.hook.memtree_prepare_capture(app=ctx, payload=payload)
        if prepared is None:
            raise Refused("unknown-tool")  # no plugin captures anything (the ``capture`` plugin disabled)
        if not isinstance(prepared, PreparedCapture) or not prepared.captures:
            raise Refused("bad-shape:pipeline")
        ids = app.plugins.pm.hook.memtree_store_capture(app=ctx, payload=payload, prepared=prepared,
                                                       replayed=replayed)
        if ids is None:
            raise Refused("not-stored")  # no plugin stores captures (the ``capture`` plugin disabled)
        return list(ids)


def _tool_label(app: Any, name: object) -> str:
    """The tool a capture is logged under: its name when an adapter captures it, else ``?`` (a name sent by
    anyone must not become an unbounded set of log labels)."""
    if isinstance(name, str) and any(name in getattr(a, "tools", ()) for a in app.plugins.capture_adapters):
        return name
    return "?"


def serve(sock: socket.socket, app: Any, stop: threading.Event) -> None:
    """Accept captures until ``stop`` is set (blocking; the daemon runs it in a thread).

    On return the listening socket is closed and its path removed (if it is still ours); connections still
    sending are closed (none was acked) and captures being stored get :data:`STOP_GRACE_S` to commit.
    """
    try:
        bound_path = sock.getsockname()
        bound_ino = os.stat(bound_path).st_ino if bound_path else None
    except OSError:
        bound_path, bound_ino = None, None
    try:
        register_root(app.paths, app.identity.root)
        from memtree_core.daemon.replacing import turn_off

        # Replacement is off until a plugin turns it on below: a flag an earlier daemon left must not make
        # the hook wait on a daemon whose plugin set or settings no longer replace anything.
        turn_off(app)
    except Exception:
        log.exception("cannot register the project for the capture hook")
    # The capture plugin writes the hooks' sender; the selectors plugin turns replacement on (capture.replace)
    # and warms its replacer up.
    app.plugins.notify("memtree_daemon_started", app=getattr(app, "context", app))
    server = IngestServer(app)
    slots = threading.BoundedSemaphore(MAX_CONNECTIONS)
    workers: set[threading.Thread] = set()
    sock.settimeout(0.25)

    def run(conn: socket.socket, state: Connection) -> None:
        try:
            server.handle(conn, state)
        finally:
            server.untrack(state)
            conn.close()
            slots.release()
            workers.discard(threading.current_thread())

    def take_slot() -> bool:
        if slots.acquire(blocking=False):
            return True
        # Full: make room by closing the sender silent longest, rather than refusing this one.
        return server.evict_idlest() and slots.acquire(timeout=ACCEPT_WAIT_S)

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
            if not take_slot():
                server._count_drop("busy", "?", 0)
                try:
                    conn.sendall(b'{"ok":false,"reason":"busy"}\n')
                except OSError:
                    pass
                conn.close()
                continue
            worker = threading.Thread(target=run, args=(conn, server.track(conn)), name="memtree-ingest-conn",
                                      daemon=True)
            workers.add(worker)
            worker.start()
    finally:
        sock.close()
        # Nothing still being sent was acked: close those now; captures being stored get to commit.
        server.evict_senders("stopping")
        end = time.monotonic() + STOP_GRACE_S
        for worker in list(workers):
            worker.join(max(0.0, end - time.monotonic()))
        if bound_path and bound_ino is not None:
            try:
                if os.stat(bound_path).st_ino == bound_ino:
                    os.unlink(bound_path)
            except OSError:
                pass
