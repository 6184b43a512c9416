"""How the capture and replacement hooks reach the daemon: the sender they run, chosen once per daemon start
(the ``capture`` plugin's ``memtree_daemon_started``) and written to ``$MEMTREE_HOME/hook-sender``, and the
log of captures they could not deliver.

The hook is on the path of every tool call, so the sender is what starts fastest here (eval/bench/hook.py):
an OpenBSD-style ``nc`` when installed, else ``perl`` running ``send.pl`` (no modules), else the fastest-starting
Python running ``send.py`` with builtin modules only.  The scripts are the plugin's ``plugin/hooks``, which the
capture package reaches as ``memtree_plugins/capture/claude-code-hooks`` (a link in a checkout, package data in
a wheel), so an install from the wheel has them too.
"""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path

SENDER_FILE = "hook-sender"
DROP_LOG = "hook-drops.log"  # written by the hook when it cannot deliver

log = logging.getLogger("memtree.ingest")


# -- the sender file the hook reads ---------------------------------------------------------------------------
def _nc_with_unix_and_eof(path: str) -> bool:
    """OpenBSD-style nc: ``-U`` (Unix sockets) and ``-N`` (shut down the write side at EOF, so we see the end)."""
    import subprocess

    try:
        out = subprocess.run([path, "-h"], capture_output=True, text=True, timeout=2)
    except (OSError, subprocess.SubprocessError):
        return False
    text = out.stdout + out.stderr
    return "-U" in text and "-N" in text


HOOKS_DIR = Path(__file__).resolve().parents[1] / "capture" / "claude-code-hooks"  # package data of capture
SEND_PY = HOOKS_DIR / "send.py"


def _startup_ms(python: str) -> float | None:
    """Best of three starts of ``python -I -S`` importing what send.py imports; None if it does not work."""
    import subprocess

    best: float | None = None
    for _ in range(3):
        t0 = time.perf_counter()
        try:
            ok = subprocess.run([python, "-I", "-S", "-c", "import _socket, posix"], capture_output=True,
                                timeout=5).returncode == 0
        except (OSError, subprocess.SubprocessError):
            return None
        if not ok:
            return None
        ms = (time.perf_counter() - t0) * 1000
        best = ms if best is None else min(best, ms)
    return best


def _python_candidates() -> list[str]:
    import sys

    # The daemon's own interpreter, resolved past venvs and pyenv shims (a shim costs ~90 ms per call), and
    # the system one, which on Linux often has _socket built in.  Not /usr/bin/python3 on macOS: without the
    # command line tools it is a stub that opens an install dialog.
    out = [os.path.realpath(sys.executable)]
    if sys.platform.startswith("linux") and os.access("/usr/bin/python3", os.X_OK):
        out.append(os.path.realpath("/usr/bin/python3"))
    return list(dict.fromkeys(out))


def _compile_sender(python: str, dest: Path) -> Path | None:
    """send.py compiled by the interpreter that will run it: saves the per-call compile (~1 ms)."""
    import subprocess

    if not SEND_PY.is_file():
        return None
    code = "import py_compile, sys; py_compile.compile(sys.argv[1], cfile=sys.argv[2], doraise=True)"
    try:
        done = subprocess.run([python, "-I", "-c", code, str(SEND_PY), str(dest)], capture_output=True, timeout=20)
    except (OSError, subprocess.SubprocessError):
        return None
    return dest if done.returncode == 0 and dest.is_file() else None


def _perl(env: dict[str, str] | os._Environ[str]) -> str | None:
    """A perl that can open a Unix socket with builtins only (what send.pl needs), resolved to its path."""
    import shutil
    import subprocess

    for candidate in (shutil.which("perl", path=env.get("PATH")), "/usr/bin/perl"):
        if not candidate or not os.access(candidate, os.X_OK):
            continue
        path = os.path.realpath(candidate)
        try:
            ok = subprocess.run([path, "-e", "socket(S, 1, 1, 0) or exit 1"], capture_output=True,
                                timeout=5).returncode == 0
        except (OSError, subprocess.SubprocessError):
            continue
        if ok:
            return path
    return None


def _python_sender(home: Path) -> tuple[str, str, str]:
    timed = [(ms, py) for py in _python_candidates() if (ms := _startup_ms(py)) is not None]
    python = min(timed)[1] if timed else _python_candidates()[0]
    compiled = _compile_sender(python, home / f"hook-send.{os.getpid()}.pyc")
    code = ""
    if compiled is not None:
        final = home / "hook-send.pyc"
        os.replace(compiled, final)
        code = str(final)
    return "python", python, code


def choose_sender(home: Path, environ: dict[str, str] | None = None) -> tuple[str, str, str]:
    """The cheapest working capture sender for the hook: ``(kind, program, code)``.

    Measured here (eval/bench/hook.py): nc ~1.5 ms to start, perl without modules ~4 ms, ``python -I -S``
    ~15 ms.  So ``("nc", path, "")`` for an OpenBSD-style nc, else ``("perl", path, "")`` (the hook runs its
    own send.pl), else ``("python", interpreter, compiled send.py or "")``: the fastest-starting working
    interpreter among the candidates, measured here once per daemon start.  ``MEMTREE_HOOK_SENDER`` =
    ``nc``/``perl``/``python`` skips the faster kinds (tests; a machine where one misbehaves).
    """
    import shutil

    env = os.environ if environ is None else environ
    forced = env.get("MEMTREE_HOOK_SENDER", "")
    nc = shutil.which("nc", path=env.get("PATH"))
    if forced in ("", "nc") and nc and _nc_with_unix_and_eof(os.path.realpath(nc)):
        return "nc", os.path.realpath(nc), ""
    if forced in ("", "nc", "perl") and (perl := _perl(env)):
        return "perl", perl, ""
    return _python_sender(home)


def choose_reply_sender(home: Path, environ: dict[str, str] | None = None,
                        capture: tuple[str, str, str] | None = None) -> tuple[str, str, str]:
    """The sender of the synchronous replacement hook: perl, else python (never nc: it cannot keep a
    sub-second deadline, nor tell a complete reply from a cut one before printing it)."""
    env = os.environ if environ is None else environ
    if env.get("MEMTREE_HOOK_SENDER", "") != "python" and (perl := _perl(env)):
        return "perl", perl, ""
    if capture is not None and capture[0] == "python":
        return capture
    return _python_sender(home)


def write_sender_file(home: Path, environ: dict[str, str] | None = None) -> tuple[str, str, str]:
    """Lines 1-3: the capture sender (kind, program, code); lines 4-6: the replacement hook's."""
    home.mkdir(mode=0o700, parents=True, exist_ok=True)
    kind, program, code = choose_sender(home, environ)
    r_kind, r_program, r_code = choose_reply_sender(home, environ, (kind, program, code))
    dest = home / SENDER_FILE
    tmp = home / f"{SENDER_FILE}.{os.getpid()}.tmp"
    try:
        tmp.write_text(f"{kind}\n{program}\n{code}\n{r_kind}\n{r_program}\n{r_code}\n")
        os.replace(tmp, dest)
    except OSError as exc:
        log.warning("cannot write %s (%s); the hook falls back to python3 on PATH", dest, exc)
    return kind, program, code


# -- the hook's drop log --------------------------------------------------------------------------------------
def drop_counts(home: Path) -> dict[str, int]:
    """Captures the hook could not deliver, per reason (from ``hook-drops.log`` and its one rotation)."""
    counts: dict[str, int] = {}
    for name in (f"{DROP_LOG}.1", DROP_LOG):
        try:
            lines = (home / name).read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            continue
        for line in lines:
            parts = line.split(" ", 2)
            if len(parts) >= 2:
                counts[parts[1]] = counts.get(parts[1], 0) + 1
    return counts
