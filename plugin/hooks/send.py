"""memtree capture sender, run by ./capture as `python3 -I -S send.py [--here DIR]`, and by ./replace as
`python3 -I -S send.py --reply MS` (the synchronous replacement hook, when perl is missing).

Builtin modules only (posix, _signal, _socket, sys, time): with -I -S nothing else is imported, which keeps this at
the cost of a bare interpreter start (see the header of ./capture for the measurements).

--here DIR: the current directory holds the project's `.ingest.sock` link (./capture found it); DIR is the
project dir, named in the drop log.  Without it the payload is buffered and its `cwd` decides the project.
Exits 0 on every path and never prints: a capture that cannot be delivered is one line in the drop log.
Stdin has a deadline and a size cap of its own: a payload that never ends is dropped (stdin-timeout,
oversized), never waited for.
"""

import _signal
import _socket
import posix
import sys
import time

CHUNK = 1 << 18
ACK_TIMEOUT_S = 5.0
STDIN_DEADLINE_S = 4.0  # the whole payload read by then (hooks.json gives the hook 10 s, the ack 5 of them)
MAX_PAYLOAD = 32 * 1024 * 1024  # what the daemon accepts (MAX_PAYLOAD_BYTES in memtree_core/daemon/ingest.py)
LOG_CAP = 65536
MISSED = ".missed-captures"  # in the project's roots/ directory; the daemon backfills these (memtree_plugins/walkers/backfill.py)
MISSED_CAP = 262144
KEEP = 65536  # bytes kept from each end of the payload, where its transcript_path and tool_use_id are


class Seen:
    """The payload's first and last KEEP bytes (never more: it can be megabytes), and whether the project's
    directory is the current one (only then is there a missed-captures log to write)."""

    head = b""
    tail = b""
    at_project = False


class StdinGaveUp(Exception):
    """The payload did not end within the deadline or the cap; args[0] is the drop reason."""


class Stdin:
    deadline = time.monotonic() + STDIN_DEADLINE_S
    taken = 0
    gave_up = ""


def _time_is_up(signum, frame):
    raise StdinGaveUp("stdin-timeout")


def read_stdin():
    """The next chunk of the payload, b"" at its end; raises StdinGaveUp past the deadline or the cap (and
    on every call after: what is left of an endless stdin is never read)."""
    if Stdin.gave_up:
        raise StdinGaveUp(Stdin.gave_up)
    try:
        left = Stdin.deadline - time.monotonic()
        if left <= 0:
            raise StdinGaveUp("stdin-timeout")
        _signal.signal(_signal.SIGALRM, _time_is_up)
        _signal.setitimer(_signal.ITIMER_REAL, left)
        try:
            chunk = posix.read(0, CHUNK)
        finally:
            _signal.setitimer(_signal.ITIMER_REAL, 0)
        Stdin.taken += len(chunk)
        if Stdin.taken > MAX_PAYLOAD:
            raise StdinGaveUp("oversized")
        return chunk
    except StdinGaveUp as exc:
        Stdin.gave_up = exc.args[0]
        raise


def remember(chunk):
    if len(Seen.head) < KEEP:
        Seen.head += chunk[:KEEP - len(Seen.head)]
    Seen.tail = (Seen.tail + chunk)[-KEEP:]


def string_field(data, key, last):
    """The string value of `"key": "..."` in raw JSON bytes, without a parser.  Inside a JSON string every
    quote is escaped, so `"key"` followed by a colon can only be a real key; values with escapes are refused."""
    pat = b'"' + key + b'"'
    i = data.rfind(pat) if last else data.find(pat)
    while i >= 0:
        j = i + len(pat)
        while data[j:j + 1] in (b" ", b"\t", b"\n", b"\r", b":"):
            j += 1
        if data[j:j + 1] == b'"' and data[i + len(pat):j].count(b":") == 1:
            end = data.find(b'"', j + 1)
            value = data[j + 1:end] if end > 0 else b""
            if value and b"\\" not in value:
                return value
        i = data.rfind(pat, 0, i) if last else data.find(pat, i + 1)
    return None


def note_missed():
    """Append `tool_use_id<TAB>transcript_path` (never any content) so the daemon can take the capture from
    the session transcript later.  Reads the rest of stdin: the id comes last in Claude Code's payloads."""
    if not Seen.at_project:
        return
    try:
        while True:
            chunk = read_stdin()
            if not chunk:
                break
            remember(chunk)
    except (OSError, StdinGaveUp):
        return  # the payload's end, where its id is, never came
    path = string_field(Seen.head, b"transcript_path", False)
    tid = string_field(Seen.tail, b"tool_use_id", True)
    if not path or not tid or len(tid) > 128 or len(path) > 4096 or not path.startswith(b"/") \
            or not path.endswith(b".jsonl") or b"\t" in path or b"\n" in path \
            or tid.strip(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-"):
        return
    try:
        if posix.stat(MISSED).st_size > MISSED_CAP:
            return  # bounded: the drop itself is still counted in hook-drops.log
    except OSError:
        pass
    try:
        fd = posix.open(MISSED, posix.O_WRONLY | posix.O_APPEND | posix.O_CREAT, 0o600)
        try:
            posix.write(fd, tid + b"\t" + path + b"\n")
        finally:
            posix.close(fd)
    except OSError:
        pass


def env(name):
    value = posix.environ.get(name.encode())
    return value.decode("utf-8", "surrogateescape") if value else ""


def home():
    h = env("MEMTREE_HOME")
    if h.startswith("~/"):
        h = env("HOME") + h[1:]
    return h or env("HOME") + "/.memtree"


def drop(reason, project):
    """One line per undelivered capture (never its content); the file is rotated past LOG_CAP."""
    note_missed()
    h = home()
    try:
        posix.mkdir(h, 0o700)
    except OSError:
        pass
    path = h + "/hook-drops.log"
    try:
        if posix.stat(path).st_size > LOG_CAP:
            posix.replace(path, path + ".1")
    except OSError:
        pass
    line = f"{int(time.time())} {reason} {project.replace(chr(10), ' ')}\n"
    try:
        fd = posix.open(path, posix.O_WRONLY | posix.O_APPEND | posix.O_CREAT, 0o600)
        try:
            posix.write(fd, line.encode("utf-8", "surrogateescape"))
        finally:
            posix.close(fd)
    except OSError:
        pass


def is_link(path):
    try:
        posix.readlink(path)
        return True
    except OSError:
        return False


def is_file(path):
    try:
        return posix.lstat(path).st_mode & 0o170000 == 0o100000
    except OSError:
        return False


def find_root(start):
    """Walk up from `start` to the nearest registered project root; chdir there.  True when found."""
    base = home() + "/roots"
    d = start.rstrip("/")
    while True:
        if is_link(base + d + "/.ingest.sock") or is_file(base + d + "/.registered"):
            posix.chdir(base + d)
            return True
        if not d:
            return False
        d = d[: d.rindex("/")]


def reason_of(exc):
    if isinstance(exc, TimeoutError):
        return "timeout"
    no = getattr(exc, "errno", None)
    if no in (2, 111, 61):  # ENOENT, ECONNREFUSED (Linux, macOS): a link to a daemon that is gone
        return "no-daemon"
    if no in (11, 35):  # EAGAIN (Linux, macOS): the listen backlog is full
        return "busy"
    if no in (32, 104, 54):  # EPIPE, ECONNRESET: the daemon refused mid-stream (it counted why)
        return "send-failed"
    return f"error-{no if no is not None else type(exc).__name__}"


def unsafe():
    """Why the socket behind ./.ingest.sock is not ours to talk to (a drop reason), or "" when it is: its
    directory must be a real directory (lstat), ours, mode 0700 (memtree_core/forwarder/paths.py checks the same
    at bind); the socket a socket, ours.  A missing directory or socket: no daemon."""
    me = posix.geteuid()
    try:
        target = posix.readlink(".ingest.sock")
    except OSError as exc:
        # No link: the daemon exited and left its .registered mark; anything else is not ours.
        return "no-daemon" if exc.errno == 2 else "unsafe-socket"
    if not target.startswith("/"):
        return "unsafe-socket"
    parent = target[: target.rindex("/")] or "/"
    try:
        st = posix.lstat(parent)
    except OSError as exc:
        return "no-daemon" if exc.errno == 2 else "unsafe-dir"
    if st.st_mode & 0o170000 != 0o040000 or st.st_uid != me or st.st_mode & 0o077:
        return "unsafe-dir"
    try:
        st = posix.lstat(target)
    except OSError as exc:
        return "no-daemon" if exc.errno == 2 else "unsafe-socket"
    if st.st_mode & 0o170000 != 0o140000 or st.st_uid != me:
        return "unsafe-socket"
    return ""


def peer_is_me(sock):
    """The listening process runs as us, where the OS says (SO_PEERCRED; LOCAL_PEERCRED on macOS/BSD)."""
    opt = getattr(_socket, "SO_PEERCRED", None)
    try:
        if opt is not None:
            value = sock.getsockopt(_socket.SOL_SOCKET, opt, 12)
            return len(value) != 12 or int.from_bytes(value[4:8], sys.byteorder) == posix.geteuid()
        opt = getattr(_socket, "LOCAL_PEERCRED", None)
        if opt is not None:
            value = sock.getsockopt(0, opt, 64)  # SOL_LOCAL; struct xucred: version, uid, ...
            return len(value) < 8 or int.from_bytes(value[4:8], sys.byteorder) == posix.geteuid()
    except OSError:
        pass
    return True


class Unsafe(Exception):
    pass


def connect_checked(sock):
    """Connect to ./.ingest.sock after the checks; raise Unsafe(reason) when the other end is not ours."""
    why = unsafe()
    if why:
        raise Unsafe(why)
    sock.connect(".ingest.sock")
    if not peer_is_me(sock):
        raise Unsafe("peer-uid")


def read_all():
    parts = []
    while True:
        chunk = read_stdin()
        if not chunk:
            return b"".join(parts)
        parts.append(chunk)


def payload_cwd(data):
    import json  # only on the rare path without CLAUDE_PROJECT_DIR

    try:
        value = json.loads(data)
    except ValueError:
        return ""
    cwd = value.get("cwd") if isinstance(value, dict) else None
    return cwd if isinstance(cwd, str) and cwd.startswith("/") else ""


def reply(ms):
    """The replacement hook: payload out (after the header), reply in, all within `ms` milliseconds; print
    what follows the ack line when it is a complete JSON line.  Silent on every failure."""
    deadline = time.monotonic() + ms / 1000
    Stdin.deadline = min(Stdin.deadline, deadline)
    try:
        data = b"MEMTREE-REPLACE 1\n" + read_all()
    except (OSError, StdinGaveUp):
        return
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        sock.settimeout(max(0.001, deadline - time.monotonic()))
        connect_checked(sock)
        view = memoryview(data)
        while view:
            sock.settimeout(max(0.001, deadline - time.monotonic()))
            sent = sock.send(view[:CHUNK])
            view = view[sent:]
        sock.shutdown(_socket.SHUT_WR)
        got = []
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return
            sock.settimeout(left)
            more = sock.recv(CHUNK)
            if not more:
                break
            got.append(more)
    except (OSError, Unsafe):
        return
    finally:
        sock.close()
    answer = b"".join(got)
    ack, nl, out = answer.partition(b"\n")
    if nl and (ack.startswith(b'{"ok": true') or ack.startswith(b'{"ok":true')) and out.startswith(b"{") \
            and out.rstrip(b"\n").endswith(b"}"):
        while out:
            out = out[posix.write(1, out):]


def main(argv):
    buffered = None
    if len(argv) >= 3 and argv[1] == "--reply":
        return reply(int(argv[2]))
    if len(argv) >= 3 and argv[1] == "--here":
        project = argv[2]
        Seen.at_project = True
    else:
        try:
            buffered = read_all()
        except StdinGaveUp as exc:
            return drop(exc.args[0], "")
        project = payload_cwd(buffered)
        if not project:
            return drop("no-cwd", "")
        found = find_root(project)
        if not found:
            try:
                posix.chdir(project)
                found = find_root(posix.getcwd())  # the physical path
            except OSError:
                pass
        if not found:
            return drop("no-project", project)
        Seen.at_project = True
        remember(buffered[:KEEP])
        remember(buffered[-KEEP:])
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    sock.settimeout(ACK_TIMEOUT_S)
    try:
        connect_checked(sock)
        if buffered is not None:
            sock.sendall(buffered)
        else:
            while True:
                chunk = read_stdin()
                if not chunk:
                    break
                remember(chunk)
                sock.sendall(chunk)
        sock.shutdown(_socket.SHUT_WR)
        ack = b""
        while b"\n" not in ack:
            more = sock.recv(4096)
            if not more:
                break
            ack += more
        if not ack:
            drop("no-ack", project)
        elif b'"store-damaged"' in ack:
            drop("store-damaged", project)  # refused, and the daemon cannot count it in a damaged store
        elif ack.startswith(b'{"ok": false') or ack.startswith(b'{"ok":false'):
            # Refused and counted by the daemon.  Refused for its own state (busy, an error such as a damaged
            # store), not for the capture's content: worth taking from the transcript later.
            reason = string_field(ack, b"reason", False) or b""
            if reason in (b"busy", b"timeout") or reason.startswith(b"error"):
                note_missed()
    except (Unsafe, StdinGaveUp) as exc:
        drop(str(exc), project)
    except OSError as exc:
        drop(reason_of(exc), project)
    finally:
        sock.close()


try:
    main(sys.argv)
except BaseException:  # noqa: BLE001 - whatever happens, the tool call must not see it
    try:
        if sys.argv[1:2] != ["--reply"]:
            drop("sender-error", "")
    except BaseException:  # noqa: BLE001
        pass
posix._exit(0)
