"""``memtree daemon``: the boot order, the threads, the idle timeout and a clean shutdown.

Boot order (what a capture or a forwarder can see, as early as possible):

1. identity, paths, the lock (another daemon holds it -> exit 0 quietly);
2. the ingest socket, then the MCP socket (both 0600; connections queue in the backlog from here on);
3. the state file (pid, version, sockets) -- a forwarder can check the version now;
4. the main thread accepts MCP sessions at once, while a worker thread boots: it opens the app (settings,
   plugins), starts the ingest server and the walker coordinator threads, imports the heavy part, the MCP
   SDK, and registers the tools (``tools/list`` and ``tools/call`` wait for it, and answer with the reason if
   it fails, e.g. a bad config); the store opens on first use.  Without records the SDK is imported first,
   so it answers ``initialize`` soonest; with them the early layer answers a session's first requests
   (:mod:`memtree_core.daemon.early`) and the SDK is imported once those answers are out;
5. the daemon records its own ``initialize`` and ``tools/list`` answers for the next first session
   (:mod:`memtree_core.daemon.handshake`).
"""

from __future__ import annotations

import faulthandler
import logging
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from memtree_core.daemon import ingest
from memtree_core.daemon.control import bind_private, try_lock, write_state
from memtree_core.daemon.project import Identity, identify
from memtree_core.daemon.redacting import stop_all as stop_redactions
from memtree_core.forwarder.paths import ProjectPaths, memtree_home
from memtree_core.forwarder.records import code_version, installed_at

log = logging.getLogger("memtree.daemon")

POLL_S = 0.2  # how often the main loop looks at the stop flag and the idle clock
STOP_GRACE_S = 4.0  # after a stop signal the process is gone by then, cleaned up or not (_hard_stop_later)
BOOT_SWITCH_INTERVAL_S = 0.0005  # see _main_loop
EARLY_ANSWERS_S = 2.0  # at most this long, the SDK's import waits for the early layer's answers in progress
DEFAULT_IDLE_TIMEOUT_S = 1800.0  # settings' default; the real value arrives with the settings


def _same_file(fd: int, path: Path) -> bool:
    try:
        a, b = os.fstat(fd), os.stat(path)
    except OSError:
        return False
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


def setup_logging(paths: ProjectPaths) -> None:
    """Log to the project's daemon.log (0600) and to stderr -- never stdout, and not twice when stderr
    already is the log (a detached daemon)."""
    fd = os.open(paths.log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    os.fchmod(fd, 0o600)
    fmt = logging.Formatter(f"%(asctime)s [{os.getpid()}] %(levelname)s %(name)s: %(message)s")
    # backslashreplace: a message naming a non-UTF-8 file (lone surrogates) is logged, not a logging error.
    handlers: list[logging.Handler] = [logging.StreamHandler(os.fdopen(fd, "a", buffering=1, encoding="utf-8",
                                                                       errors="backslashreplace"))]
    if not _same_file(2, paths.log):
        handlers.append(logging.StreamHandler(sys.stderr))
    root = logging.getLogger()
    for h in handlers:
        h.setFormatter(fmt)
        root.addHandler(h)
    root.setLevel(logging.INFO)


def _remove_socket(sock: socket.socket | None, path: Path) -> None:
    if sock is None:
        return
    try:
        sock.close()
    finally:
        path.unlink(missing_ok=True)


def _last_capture() -> float | None:
    """The ingest server's last activity as a ``time.monotonic()`` value, when it offers one."""
    probe = getattr(ingest, "last_activity", None)
    if not callable(probe):
        return None
    try:
        value = probe()
    except Exception:
        return None
    return float(value) if isinstance(value, int | float) else None


M_MMAP_THRESHOLD = -3  # glibc's mallopt() parameter
BIG_ALLOCATION_BYTES = 1 << 20


def return_big_allocations() -> None:
    """Ask glibc to serve every allocation of 1 MB or more with its own mmap, given back to the kernel when
    freed.  By default the threshold follows the largest block freed so far (up to 32 MB): after one big
    capture, the next ones land in per-thread heaps that keep their pages, and the daemon's footprint grows
    with the number of capture threads that ever held one.  Elsewhere (musl, macOS) this does nothing."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        libc = ctypes.CDLL(None)
        libc.mallopt(M_MMAP_THRESHOLD, BIG_ALLOCATION_BYTES)
    except (OSError, AttributeError):
        pass


class Daemon:
    def __init__(self, project: str | None, project_hash: str | None = None,
                 on_ready: Callable[[], None] | None = None) -> None:
        root = Path(project or os.getcwd()).expanduser().absolute()
        # The forwarder already ran git for the identity; skip that on the cold-start path when it says so.
        self.identity = (Identity(project_hash, root, False, None) if project_hash
                         else identify(root))
        self.paths = ProjectPaths.for_hash(memtree_home(), self.identity.hash)
        self.stop_event = threading.Event()
        self.version = code_version()
        self.lock_fd: int | None = None
        self.ingest_sock: socket.socket | None = None
        self.mcp_sock: socket.socket | None = None
        self.threads: list[threading.Thread] = []
        self.app: Any = None
        self.built: list[Any] = []  # the tools the plugins built (memtree_core.daemon.early.Built)
        self.stop_reason = ""
        self.boot_failed = False
        self.idle_timeout_s = DEFAULT_IDLE_TIMEOUT_S  # until the settings are loaded
        self.t0 = time.perf_counter()
        self.on_ready = on_ready  # told once the sockets and the state file are in place
        self.switch_interval = sys.getswitchinterval()  # restored once the boot thread is done
        self.watchdog: Any = None  # the log, open for faulthandler once a stop signal came (_hard_stop_later)

    # -- lifecycle -----------------------------------------------------------------------------------
    def run(self) -> int:
        self.paths.ensure()
        self.lock_fd = try_lock(self.paths.lock)
        if self.lock_fd is None:
            return 0  # another daemon serves this project; the forwarder that started us will find it
        try:
            self.paths.state.unlink(missing_ok=True)  # a killed daemon's state must not be mistaken for ours
            self.ingest_sock = ingest.bind(self.paths, self.identity.root)  # root: the hook finds us at boot
            self.mcp_sock = bind_private(self.paths.mcp_socket)
            write_state(self.paths, {
                "pid": os.getpid(), "version": self.version, "installed_at": installed_at(),
                "project_root": str(self.identity.root),
                "ingest_socket": str(self.paths.ingest_socket), "mcp_socket": str(self.paths.mcp_socket),
                "started_at": time.time(),
            })
            self._install_signals()
            if self.on_ready is not None:
                self.on_ready()
            setup_logging(self.paths)
            log.info("daemon %s starting for %s (pid %d)", self.version, self.identity.root, os.getpid())
            return self._serve()
        finally:
            self._shutdown()

    def _install_signals(self) -> None:
        def on_signal(signum: int, _frame: Any) -> None:
            self.stop_reason = f"signal {signal.Signals(signum).name}"
            self.stop_event.set()
            stop_redactions()  # a tool call redacting a big file gives up instead of holding the stop
            self._hard_stop_later()

        # Whoever started us may have ignored SIGCHLD (inherited across fork and exec): the kernel would then
        # reap our children itself and every subprocess (the bash tool, git) would report exit status 0.
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        signal.signal(signal.SIGTERM, on_signal)
        signal.signal(signal.SIGINT, on_signal)
        signal.signal(signal.SIGHUP, on_signal)

    def _hard_stop_later(self) -> None:
        """Whatever still holds the stop up (a thread in a long call, a lock), the process exits within
        :data:`STOP_GRACE_S` of the signal: faulthandler's watchdog is a C thread that needs no GIL; it writes
        every thread's stack to the log, then ``_exit(1)``s.  A daemon killed so leaves its socket and state
        file behind, which the next one replaces (as after a crash); the kernel releases the lock."""
        if self.watchdog is not None:
            return
        try:
            self.watchdog = open(self.paths.log, "a")  # noqa: SIM115 - kept open until the process ends
            faulthandler.dump_traceback_later(STOP_GRACE_S, exit=True, file=self.watchdog)
        except (OSError, ValueError, RuntimeError):
            log.exception("cannot arm the stop watchdog")

    def _serve(self) -> int:
        return_big_allocations()
        # Heavy imports happen from here on, after every socket is bound and the state file is written.
        import anyio

        from memtree_core.daemon.early import Early
        from memtree_core.daemon.sessions import Activity, Sdk

        anyio.run(self._main_loop, Sdk(Early.load(self.paths.dir, self.version)), Activity())
        return 0

    def _import_sdk(self, sdk: Any, ready: bool) -> None:
        """The MCP server, on the boot thread; ``ready``: the SDK answers sessions from now on."""
        import anyio.from_thread

        from memtree_core.daemon.tools import create_server

        sdk.server = create_server(self.version)
        log.info("answering MCP on %s after %.0f ms%s", self.paths.mcp_socket, (time.perf_counter() - self.t0) * 1000,
                 "; loading settings, plugins and tools" if ready else "")
        if ready:
            anyio.from_thread.run_sync(sdk.ready.set)

    def _boot(self, sdk: Any) -> None:
        """On a worker thread while the first requests are answered: the app, the threads, the SDK, the tools."""
        import anyio.from_thread

        from memtree_core.app import App
        from memtree_core.daemon.coordinator import Coordinator
        from memtree_core.daemon.early import build_tools

        early = sdk.early
        if early is None:
            self._import_sdk(sdk, ready=True)
        try:
            # A bad config fails here: tools/list and tools/call answer with the reason (and the log path).
            self.app = App.open(self.identity.root)
            if self.app.identity.hash != self.identity.hash:
                from memtree_core.daemon import project

                # The forwarder's remembered identity is out of date (a history rewritten under a branch
                # that stayed checked out): the next session computes it afresh.
                project.forget(self.paths.home, self.identity.hash)
                raise RuntimeError(f"the project's identity changed while the daemon started "
                                   f"({self.identity.hash} -> {self.app.identity.hash}); start it again")
            self.idle_timeout_s = float(self.app.settings.daemon.idle_timeout_s)
            for warning in self.app.loaded.warnings:
                log.warning("config: %s", warning)
            if self.app.redaction_unavailable:
                log.warning("nothing will be stored: redaction is unavailable (%s)", self.app.redaction_unavailable)
            self._start_thread("ingest", ingest.serve, self.ingest_sock, self.app, self.stop_event)
            # (captures the hook could not deliver while no daemon answered: the ``backfill`` walker)
            self._start_thread("coordinator", Coordinator(self.app).run, self.stop_event)
            self.built = build_tools(self.app)
            if early is not None:
                early.arm(self.app, self.built, self.version)
                log.info("answering early after %.0f ms", (time.perf_counter() - self.t0) * 1000)
                early.wait_idle(EARLY_ANSWERS_S)
                self._import_sdk(sdk, ready=False)
            from memtree_core.daemon.tools import register_tools

            names = register_tools(sdk.server, self.app, self.built)
            log.info("tools ready after %.0f ms: %s", (time.perf_counter() - self.t0) * 1000,
                     ", ".join(names) or "(none)")
            self._check_store()
        except Exception as exc:
            log.exception("the daemon could not load its plugins and tools")
            if early is not None:
                early.disarm()
            if sdk.server is None:
                self._import_sdk(sdk, ready=False)
            sdk.server.boot_error = (f"memtree could not start its tools: {type(exc).__name__}: {exc} "
                                     f"(see {self.paths.log}); fix it, then 'memtree stop' or end this session")
            self.boot_failed = True
        finally:
            sys.setswitchinterval(self.switch_interval)
            if sdk.server is not None:
                sdk.server.tools_ready.set()
                anyio.from_thread.run_sync(sdk.ready.set)
            if early is not None:
                log.info("the SDK answers from now on; %d request(s) were answered before it", early.answered)

    def _check_store(self) -> None:
        """Open the store now: its integrity check runs at start, not at the first capture (a big store's in
        full on a thread), and a damaged store is refused (captures answered ``store-damaged``, tools with the
        reason) from then on."""
        from memtree_core.store import StoreError
        from memtree_core.store.store import QUICK_CHECK_SYNC_BYTES, check_in_background

        try:
            store = self.app.store
        except StoreError as exc:
            log.error("%s", exc)
            return
        if store.dialect != "sqlite":
            return  # a server's storage is its administrator's to check
        if store.path.stat().st_size > QUICK_CHECK_SYNC_BYTES:  # opening checked only the cheap part

            def damaged(message: str) -> None:
                self.app.damaged = message
                log.error("%s", message)

            check_in_background(store.path, damaged)

    def _start_thread(self, name: str, target: Any, *args: Any) -> None:
        def guarded() -> None:
            try:
                target(*args)
            except Exception:
                log.exception("%s thread crashed", name)

        t = threading.Thread(target=guarded, name=f"memtree-{name}", daemon=True)
        t.start()
        self.threads.append(t)

    async def _boot_and_record(self, sdk: Any) -> None:
        import anyio

        await anyio.to_thread.run_sync(self._boot, sdk)
        if not self.boot_failed and sdk.server is not None:
            # For the next first session: its forwarder answers initialize from this.
            try:
                from memtree_core.daemon.handshake import record
            except ImportError:  # an SDK without what it needs: first sessions wait for the daemon, as before
                log.exception("cannot record the handshake for forwarders")
                return
            await record(sdk.server, self.paths.dir, self.version, self.built)

    async def _main_loop(self, sdk: Any, activity: Any) -> None:
        import anyio

        from memtree_core.daemon.sessions import serve_socket

        sdk.ready = anyio.Event()
        async with anyio.create_task_group() as tg:
            tg.start_soon(serve_socket, self.mcp_sock, sdk, activity)
            # The boot thread holds the GIL for long stretches (imports, settings, plugins); the sessions' thread
            # would wait up to a whole switch interval (5 ms) at every socket wakeup while answering the first
            # handshake.  A short interval until boot is done hands the GIL back sooner.
            sys.setswitchinterval(BOOT_SWITCH_INTERVAL_S)
            tg.start_soon(self._boot_and_record, sdk)
            while not self.stop_event.is_set():
                await anyio.sleep(POLL_S)
                if self.boot_failed and activity.sessions == 0:
                    # Do not linger broken: the next session starts a fresh daemon (after the fix).
                    self.stop_reason = "plugins and tools failed to load and no session is left"
                    self.stop_event.set()
                elif activity.sessions == 0:
                    last = max(activity.last_change, _last_capture() or 0.0)
                    if time.monotonic() - last >= self.idle_timeout_s:
                        self.stop_reason = f"idle for {self.idle_timeout_s:g}s with no session and no capture"
                        self.stop_event.set()
            log.info("stopping: %s", self.stop_reason or "asked to")
            self._stopping()  # tool calls in flight return at once instead of at their deadline
            tg.cancel_scope.cancel()
        self.mcp_sock = None  # the listener closed it

    def _stopping(self) -> None:
        """Let the plugins end what they started (the tools' processes): ``memtree_daemon_stopping``."""
        app = self.app
        if app is None:
            return  # the plugins never loaded, so they started nothing
        app.plugins.notify("memtree_daemon_stopping", app=app.context)

    def _shutdown(self) -> None:
        self.stop_event.set()
        if self.lock_fd is None:
            return
        try:
            self._stopping()  # anything started while the sessions were closing
            for t in self.threads:
                t.join(timeout=5)
                if t.is_alive():
                    log.warning("%s did not stop within 5s", t.name)
            _remove_socket(self.mcp_sock, self.paths.mcp_socket)
            if self.mcp_sock is None:
                self.paths.mcp_socket.unlink(missing_ok=True)
            _remove_socket(self.ingest_sock, self.paths.ingest_socket)
            roots = [self.identity.root] + ([self.app.identity.root] if self.app is not None else [])
            for root in dict.fromkeys(roots):
                ingest.unregister_root(self.paths, root)  # before the lock goes: a new daemon registers after
            if self.app is not None:
                self.app.close()
            self.paths.state.unlink(missing_ok=True)
            log.info("daemon stopped")
        finally:
            # Released last: a new daemon can only bind after this one has cleaned up.
            os.close(self.lock_fd)
            self.lock_fd = None


def run(project: str | None, project_hash: str | None = None,
        on_ready: Callable[[], None] | None = None) -> int:
    return Daemon(project, project_hash, on_ready).run()
