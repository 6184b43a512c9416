"""A hostile file (megabytes of secret keywords) neither holds an MCP ``read`` nor the daemon: the read answers
(the file redacted, or a clear refusal) and SIGTERM stops the daemon even while it redacts.

Real daemon, real MCP client, real files.  Redaction's speed itself is eval/bench/redaction.py's.
"""

from __future__ import annotations

import os
import random
import signal
import string
import time
from pathlib import Path

import anyio
import pytest
from helpers.common import wait_for
from helpers.daemon import mcp_session, project_paths, run_async, state_pid, text_of

from memtree_core.daemon import redacting, redaction_gate
from memtree_core.daemon.main import STOP_GRACE_S
from memtree_core.forwarder.daemons import pid_alive

MB = 1 << 20
rng = random.Random(20261204)


def keyword_lines(size: int) -> tuple[str, list[str]]:
    """``token: <value>`` lines, each value distinct: every line must be judged on its own."""
    lines, values, n = [], [], 0
    while n < size:
        v = "".join(rng.choice(string.ascii_letters + string.digits) for _ in range(16))
        values.append(v)
        lines.append(f"token: {v}")
        n += len(v) + 8
    return "\n".join(lines) + "\n", values


@pytest.fixture
def hostile(project: Path) -> tuple[Path, list[str]]:
    rng.seed(20261204)
    text, values = keyword_lines(20 * MB - 64)  # just under read's 20 MB limit
    path = project / "hostile.yaml"
    path.write_text(text)
    return path, values


@pytest.mark.timeout(180)
def test_a_read_of_20mb_of_keyword_lines_answers_and_leaks_nothing(
        home: Path, project: Path, env: dict[str, str], daemon_guard: list[int],
        hostile: tuple[Path, list[str]]) -> None:
    path, values = hostile
    dense = project / "one-line.txt"
    dense.write_text("token: " * (20 * MB // 7))

    async def main() -> None:
        async with mcp_session(project, env) as s:
            daemon_guard.append(state_pid(project))
            result = await s.call_tool("read", {"path": str(path), "lines": "1-5"})
            text = text_of(result)
            if result.is_error:  # refused: the file could not be redacted within the deadline
                assert "took longer than" in text and "split it" in text, text
            else:
                assert not any(v in text for v in values[:5]), text
            one = await s.call_tool("read", {"path": str(dense)})
            assert not one.is_error, text_of(one)
            assert "[REDACTED:dense-line]" in text_of(one) and "token: token:" not in text_of(one)

    run_async(main)


@pytest.mark.timeout(180)
def test_sigterm_stops_the_daemon_in_the_middle_of_a_long_redaction(
        home: Path, project: Path, env: dict[str, str], daemon_guard: list[int],
        hostile: tuple[Path, list[str]]) -> None:
    path, _ = hostile
    log = project_paths(project).log

    async def main() -> None:
        async with mcp_session(project, env) as s:
            pid = state_pid(project)
            daemon_guard.append(pid)
            size = log.stat().st_size if log.exists() else 0

            async def reader() -> None:
                try:
                    await s.call_tool("read", {"path": str(path)})
                except Exception:  # the daemon went away mid-call: the session may say so any way it likes
                    pass

            async with anyio.create_task_group() as tg:
                tg.start_soon(reader)
                # Give the read time to reach the daemon (the file is 20 MB: redacting it takes seconds, and
                # is refused past 4 s), then stop the daemon while it redacts.
                await anyio.sleep(1.5)
                os.kill(pid, signal.SIGTERM)
                t0 = time.monotonic()
                await anyio.to_thread.run_sync(lambda: wait_for(lambda: not pid_alive(pid), 30, "the daemon to exit"))
                elapsed = time.monotonic() - t0
                tg.cancel_scope.cancel()
            tail = log.read_text(errors="replace")[size:]
            assert "stopping: signal SIGTERM" in tail, tail[-2000:]
            # The stop's own bound (not redaction's speed): gone within STOP_GRACE_S of the signal, whatever it
            # waited on (the redaction gives up at once; faulthandler's watchdog ends anything else).
            assert elapsed < STOP_GRACE_S + 1, f"the daemon took {elapsed:.1f} s to stop"

    run_async(main)


def test_a_big_text_past_its_deadline_is_refused_with_the_reason(app, monkeypatch) -> None:
    text, values = keyword_lines(2 * MB)
    monkeypatch.setattr(redaction_gate, "DEADLINE_S", 0.0)
    with pytest.raises(redaction_gate.RedactionTooSlow) as refused:
        app.redact_lines(text)
    assert "took longer than 0 s" in str(refused.value) and "nothing was stored" in str(refused.value)
    small, _ = keyword_lines(redaction_gate.BIG_TEXT // 2)
    out = app.redact_lines(small)  # texts under BIG_TEXT (every capture) have no deadline
    assert "[REDACTED:" in out.text


def test_a_stopping_daemon_ends_every_redaction_in_flight(app, monkeypatch) -> None:
    monkeypatch.setattr(redacting, "_stopping", redacting.threading.Event())  # this test's flag only
    redacting.stop_all()
    with pytest.raises(redaction_gate.RedactionUnavailable, match="the daemon is stopping"):
        app.redact_lines(keyword_lines(2 * MB)[0])
    with pytest.raises(redacting.TooSlow):  # from inside a rule's own loop, not only between rules
        redacting.check_deadline()
