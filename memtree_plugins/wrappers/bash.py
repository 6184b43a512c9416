"""``bash(command, timeout?, budget_tokens?)``: run in the project root, store, return a bounded preview.

The stored ``tool_output`` node (``tool:bash#<keyed hash of the redacted command and directory>``) holds::

    $ <command>
    <stdout: head [… N bytes omitted …] tail>
    [stderr]
    <stderr: head … tail>
    [exit 1]            (or [timed out after 5 s; killed, exit -15])

cut to ``capture.maxBytes`` with the head/tail kept (``truncated``/``original_bytes`` on the row give the
real size), after ``app.redact()``; the preview returned is cut from the same redacted text, so a secret
never comes back either.  The same content within the hour reuses the existing node.  A command matched
by the deny list (``env``, ``printenv``, ``bash.deny``) or ``capture.bash = false`` stores nothing, and so
does a project whose redaction is unavailable (:mod:`memtree_core.daemon.redaction_gate`): the command still runs
and the result says why nothing was stored.
"""

from __future__ import annotations

import logging
import math
import os
import re
import signal
from collections.abc import Callable
from typing import TYPE_CHECKING

from pydantic import BaseModel

from memtree_core.daemon.redaction_gate import RedactionUnavailable
from memtree_plugins.lib.masking.printed_secrets import RULE, mask_printed
from memtree_plugins.wrappers.budget import head_tail
from memtree_plugins.wrappers.records import (
    args_digest,
    budget_or_default,
    recent_duplicate,
    record_original_size,
    stored_hash,
)
from memtree_plugins.wrappers.run import HeadTail, Outcome, run

if TYPE_CHECKING:
    from memtree_core.context import Context

log = logging.getLogger("memtree.wrappers.bash")

DEFAULT_TIMEOUT_S = 120.0
MAX_TIMEOUT_S = 600.0
COMMAND_CHARS = 2000  # of the command kept in the stored text (all of it stays in metadata)


class BashResult(BaseModel):
    """Exit status, sizes, the stored node and a head/tail preview of the (redacted) output."""

    command: str
    exit_code: int | None
    timed_out: bool
    duration_ms: int
    stdout_bytes: int
    stderr_bytes: int
    node_id: str | None = None
    stored: bool
    deduplicated: bool = False
    not_stored_reason: str | None = None
    preview: str
    preview_truncated: bool
    tokens: int = 0
    budget_tokens: int
    redactions: dict[str, int] = {}
    notes: list[str] = []

    def render(self) -> str:
        return _render(self, self.preview)


def _status(r: BashResult) -> str:
    if r.timed_out:
        return f"timed out, killed (exit {r.exit_code})"
    if r.exit_code is not None and r.exit_code < 0:
        try:
            return f"killed by {signal.Signals(-r.exit_code).name}"
        except ValueError:
            return f"killed by signal {-r.exit_code}"
    return f"exit {r.exit_code}"


def _render(r: BashResult, preview: str) -> str:
    head = (f"{_status(r)} · {r.duration_ms} ms · stdout {r.stdout_bytes:,} B, stderr {r.stderr_bytes:,} B · "
            + (f"node {r.node_id}" + (" (reused)" if r.deduplicated else "") if r.stored
               else f"not stored: {r.not_stored_reason}"))
    parts = [head] + [f"note: {n}" for n in r.notes]
    if r.redactions:
        parts.append("redacted: " + ", ".join(f"{n} {k}" for k, n in sorted(r.redactions.items())))
    parts.append(preview if preview else "(no output)")
    return "\n".join(parts)


def _decode(data: bytes) -> str:
    return data.decode("utf-8", "replace")


def _stream_text(ht: HeadTail, limit: int) -> str:
    """One stream as text within ``limit`` bytes: all of it, or head + marker + tail cut at line ends."""
    head, tail, omitted = ht.parts()
    if omitted == 0 and len(head) + len(tail) <= limit:
        return _decode(head + tail)
    omitted += max(0, len(head) + len(tail) - limit)
    h = head[: int(limit * 0.4)]
    t_room = limit - len(h)
    t = (head[len(h):] + tail)[-t_room:] if t_room > 0 else b""
    cut = h.rfind(b"\n")
    if cut >= len(h) // 2:
        h = h[: cut + 1]
    nl = t.find(b"\n")
    if 0 <= nl < len(t) // 2:
        t = t[nl + 1:]
    t = _past_key_end(t)
    gone = ht.total - len(h) - len(t)
    return _decode(h) + f"\n[… {gone:,} bytes omitted …]\n" + _decode(t)


_KEY_END = re.compile(rb"-----END [A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----[^\n]*\n?")


def _past_key_end(tail: bytes) -> bytes:
    """A tail that starts inside a private key (its BEGIN line was in the omitted middle) starts after
    the key instead: lines of a key's body have nothing that marks them as secret on their own."""
    m = _KEY_END.search(tail)
    if m is None or b"-----BEGIN" in tail[:m.start()]:
        return tail
    return tail[m.end():]


def compose(command: str, outcome: Outcome, max_bytes: int, timeout: float) -> tuple[str, bool]:
    """The stored text (command, stdout, stderr, exit status) within ``max_bytes``, and whether output
    had to be cut to fit."""
    cmd = command if len(command) <= COMMAND_CHARS else command[:COMMAND_CHARS] + "…"
    if outcome.timed_out:
        footer = f"[timed out after {timeout:g} s; killed, exit {outcome.returncode}]"
    else:
        footer = f"[exit {outcome.returncode}]"
    frame = len(f"$ {cmd}\n\n[stderr]\n\n{footer}\n".encode()) + 200  # markers and decoding slack
    room = max(max_bytes - frame, 256)
    err_total, out_total = outcome.stderr.total, outcome.stdout.total
    cut = err_total + out_total > room or bool(outcome.stdout.parts()[2] or outcome.stderr.parts()[2])
    if not cut:
        err_room, out_room = err_total, out_total
    else:
        err_room = min(err_total, max(room // 3, room - out_total))
        out_room = room - err_room
    parts = [f"$ {cmd}"]
    if out_total:
        parts.append(_stream_text(outcome.stdout, out_room).rstrip("\n"))
    if err_total:
        parts += ["[stderr]", _stream_text(outcome.stderr, err_room).rstrip("\n")]
    parts.append(footer)
    return "\n".join(parts) + "\n", cut


def _check(command: str, timeout: float | None) -> tuple[float, list[str]]:
    if not isinstance(command, str) or not command.strip():
        raise ValueError("command is empty; give a shell command to run in the project root")
    if "\x00" in command:
        raise ValueError("command holds a NUL byte, which no shell can run; remove it")
    notes: list[str] = []
    if timeout is None:
        return DEFAULT_TIMEOUT_S, notes
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or math.isnan(timeout) or timeout <= 0:
        raise ValueError(f"timeout must be a positive number of seconds (at most {MAX_TIMEOUT_S:g}), "
                         f"got {timeout!r}")
    if timeout > MAX_TIMEOUT_S:
        notes.append(f"timeout {timeout:g} s lowered to the {MAX_TIMEOUT_S:g} s cap")
        return MAX_TIMEOUT_S, notes
    return float(timeout), notes


def _why_not_stored(app: Context, command: str) -> str | None:
    denied = app.command_denied(command)
    if denied:
        return f"command is on the deny list ({denied})"
    if not app.settings.capture.bash:
        return "capture.bash is false for this project"
    why = app.redaction_unavailable
    if why:
        return f"redaction is unavailable ({why})"
    return None


def _redact(app: Context, text: str) -> tuple[str, dict[str, int], str | None]:
    """(text, hits, None), or the text as it was with the reason it must not be stored."""
    try:
        clean, hits = app.redact(text)
    except RedactionUnavailable as exc:
        return text, {}, f"redaction is unavailable ({exc.why})"
    return clean, hits, None


# What a redactions line can add to the header after the run (checked again at the end).
_REDACTION_ROOM = 40
# The two notes a run can add (never both: the first only after a normal exit, the second on timeout);
# the second at its longest (memtree_plugins.wrappers.children.Ended.summary).
_LEFT_RUNNING = ("a background process kept the output open after the shell exited; its later output is not "
                 "captured")
_NOT_ENDED_WORST_CASE = ("99999 process(es) the command started could not be ended (pid 4194304, 4194304, "
                         "4194304, …); kill them yourself")


def bash(app: Context, command: str, timeout: float | None = None, budget_tokens: int | None = None) -> BashResult:
    limit, notes = _check(command, timeout)
    budget = budget_or_default(budget_tokens, app.plugin_settings("wrappers").budgets.bash)
    root = str(app.identity.root)
    store = app.store
    clean_command, _, unredacted = _redact(app, command)
    not_stored = _why_not_stored(app, command) or unredacted
    # Refuse a budget too small for the header before running anything (worst-case figures).
    probe = BashResult(command=clean_command, exit_code=-15, timed_out=True, duration_ms=int(limit * 1000),
                       stdout_bytes=10**11, stderr_bytes=10**11, node_id=None if not_stored else "0" * 26,
                       stored=not not_stored, deduplicated=True, not_stored_reason=not_stored, preview="",
                       preview_truncated=True, budget_tokens=budget, notes=notes + [max(_LEFT_RUNNING,
                                                                       _NOT_ENDED_WORST_CASE, key=len)])
    frame = app.count_tokens(_render(probe, "")) + _REDACTION_ROOM
    if frame >= budget:
        raise ValueError(f"budget_tokens={budget} cannot hold even the result header ({frame} tokens); ask "
                         f"for at least {frame + 50} (the command was not run)")
    env = {**os.environ, "PAGER": "cat", "GIT_PAGER": "cat"}  # nothing may wait for a keypress
    outcome = run(command, root, limit, keep=store.max_bytes, env=env)
    if outcome.not_ended:
        notes.append(outcome.not_ended)
    if outcome.left_running:
        notes.append(_LEFT_RUNNING)
    raw, cut_output = compose(command, outcome, store.max_bytes, limit)
    raw, printed = mask_printed(command, raw, framed=True)  # `echo "$X_TOKEN"`: only the command says what it is
    text, hits, unredacted = _redact(app, raw)
    if printed:
        hits[RULE] = hits.get(RULE, 0) + printed
    not_stored = not_stored or unredacted
    app.record_redactions(hits)  # whether or not the output is stored, its preview went out redacted
    result = BashResult(command=clean_command, exit_code=outcome.returncode, timed_out=outcome.timed_out,
                        duration_ms=outcome.duration_ms, stdout_bytes=outcome.stdout.total,
                        stderr_bytes=outcome.stderr.total, stored=False, not_stored_reason=not_stored,
                        preview="", preview_truncated=False, budget_tokens=budget, redactions=hits, notes=notes)
    if not not_stored:
        try:
            result.node_id, result.deduplicated = _store(app, text, command, clean_command, outcome, cut_output)
            result.stored = True
        except Exception as exc:  # the command has run: its output reaches the agent whatever the store says
            log.exception("bash: the output of a command that ran could not be stored")
            result.not_stored_reason = (f"the store could not be written ({type(exc).__name__}: {exc}); this "
                                        "answer is the only copy of the output; memtree info says what is wrong")
    # The preview leaves out the "$ command" line: the caller knows what it ran.
    body = text.split("\n", 1)[1] if "\n" in text else text
    room = budget - app.count_tokens(_render(result, ""))
    cut = head_tail(body.rstrip("\n"), room, app.count_tokens) if room > 0 else None
    result.preview, result.preview_truncated = (cut.text, cut.truncated) if cut else ("", bool(body.strip()))
    while app.count_tokens(result.render()) > budget and result.preview:  # counter that does not add up
        result.preview = result.preview[: len(result.preview) * 9 // 10]
        result.preview_truncated = True
    if app.count_tokens(result.render()) > budget and result.redactions:
        result.redactions = {"secrets": sum(result.redactions.values())}  # the short form of the same fact
    result.tokens = app.count_tokens(result.render())
    return result


def _store(app: Context, text: str, command: str, clean_command: str, outcome: Outcome,
           cut_output: bool) -> tuple[str, bool]:
    store = app.store
    digest = stored_hash(store, text)
    with store.tx():
        old = recent_duplicate(store, "tool_output", digest)
        if old is not None:
            store.bump("bash:deduplicated")
            return old, True
        total = outcome.stdout.total + outcome.stderr.total
        meta = {"tool": "bash", "command": clean_command, "cwd": str(app.identity.root),
                "exit_code": outcome.returncode, "timed_out": outcome.timed_out,
                "duration_ms": outcome.duration_ms, "bytes": total, "stdout_bytes": outcome.stdout.total,
                "stderr_bytes": outcome.stderr.total}
        uri = f"tool:bash#{args_digest(app, {'command': command, 'cwd': str(app.identity.root)})}"
        node = store.insert_node("tool_output", text, source_uri=uri, status_="live", metadata=meta)
        if cut_output or node.truncated:
            record_original_size(store, node.id, max(total, node.original_bytes))
    return node.id, False


def build(app: Context) -> Callable[..., BashResult]:
    def bash_tool(command: str, timeout: float | None = None, budget_tokens: int | None = None) -> BashResult:
        """Run a shell command in the project root and store its output, returning only a bounded preview.

        Use instead of a plain shell for commands with long output (tests, builds, logs).  Returns the
        exit code, byte counts, the stored node id and a head/tail preview within budget_tokens (default
        from settings); page through the full stored output with get.  timeout: seconds (default 120, at
        most 600); on timeout the whole process group is killed, and so are the background processes the
        command started, and the partial output kept.  Secrets are
        redacted from what is stored and returned; env/printenv output is never stored.
        """
        return bash(app, command, timeout, budget_tokens)

    bash_tool.__name__ = "bash"
    return bash_tool
