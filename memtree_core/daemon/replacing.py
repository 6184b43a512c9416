"""Shrinking native tool output, the host's half: the synchronous hook's protocol and the output-replacer hook.

Claude Code (>= 2.1.121) replaces what the model sees with ``hookSpecificOutput.updatedToolOutput`` when a
*synchronous* PostToolUse hook prints it.  ``plugin/hooks/replace`` sends the payload over the ingest socket
prefixed with :data:`HEADER`; the ingest server stores the full output exactly as passive capture does, then
asks the registered output replacers (``memtree_register_output_replacers``, in precedence order) for the
replacement and answers the ack line followed by the hook's stdout (nothing when the output passes
untouched).  The built-in replacer (the ``selectors`` plugin) cuts Bash and Grep output to a budgeted slice.

The flag file next to the hook's root link is what makes the hook ask at all, and the host answers with a
replacement only while it is there.  The daemon's start removes the one an earlier daemon left
(:func:`turn_off`); the ``selectors`` plugin, whose setting ``capture.replace`` (off by default) switches
replacement, writes it from its ``memtree_daemon_started`` hook (:func:`turn_on`), so with that plugin
disabled the hook never waits.  An output every replacer leaves alone is counted
``replace:untouched:<reason>``; the replacer that produced a replacement counts it (``delivered``) only
after the reply reached a hook still waiting.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memtree_core.daemon.root_links import root_link
from memtree_core.types import Replacement

if TYPE_CHECKING:
    from memtree_core.context import Context
    from memtree_core.types import OutputReplacer

log = logging.getLogger("memtree.replace")

# First line of a request that wants a replacement back.  A payload is a JSON object, so it starts with
# "{" or whitespace: this line cannot be mistaken for one, and an old client never sends it.
HEADER = b"MEMTREE-REPLACE 1\n"
# Written next to the hook's root link when replacement is on: its one line is the hook's timeout in ms.
FLAG_NAME = ".replace"


def split_request(raw: bytes) -> tuple[bool, bytes]:
    """(wants a replacement, the payload)."""
    if raw.startswith(HEADER):
        return True, raw[len(HEADER):]
    return False, raw


# -- the flag the hook reads ----------------------------------------------------------------------------------
def _flag_forms(app: Context) -> list[Path]:
    # the hook looks the project up by the path it is given: the root as opened and as resolved.
    root = app.identity.root
    forms = dict.fromkeys((os.path.abspath(root), os.path.realpath(root)))
    return [flag_path(app.paths.home, form) for form in forms]


def turn_on(app: Context, timeout_ms: int) -> None:
    """Make ``plugin/hooks/replace`` ask this project's daemon, waiting at most ``timeout_ms`` for the answer."""
    for flag in _flag_forms(app):
        try:
            flag.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            tmp = flag.with_name(f"{FLAG_NAME}.{os.getpid()}.tmp")
            tmp.write_text(f"{int(timeout_ms)}\n")
            os.replace(tmp, flag)  # atomic: a hook never reads half a timeout
        except OSError as exc:
            log.warning("cannot write %s (%s); tool output will not be shrunk there", flag, exc)


def turn_off(app: Context) -> None:
    """Make the hook stop asking (the flag gone): at each daemon start, before any plugin may turn it on."""
    for flag in _flag_forms(app):
        try:
            flag.unlink(missing_ok=True)
        except OSError as exc:
            log.warning("cannot remove %s (%s); the replacement hook may wait for nothing there", flag, exc)


def is_on(app: Context) -> bool:
    return any(flag.exists() for flag in _flag_forms(app))


def flag_path(home: Path, root: Path | str) -> Path:
    return root_link(home, root).parent / FLAG_NAME


# -- asking the replacers ------------------------------------------------------------------------------------
def choose(app: Context, payload: dict[str, Any], node_id: str, *,
           truncated: bool = False) -> tuple[OutputReplacer | None, Replacement]:
    """The first replacement a replacer offers, in precedence order, with that replacer; else (None, the
    first replacer's reason for leaving it alone).  Never raises: a failing replacer is skipped."""
    if not is_on(app):  # a hook that read a flag this daemon removed: the switch is off
        return None, Replacement(None, "disabled")
    first: Replacement | None = None
    for replacer in app.plugins.output_replacers.ranked():
        try:
            outcome = replacer.replace(app, payload, node_id, truncated=truncated)
        except Exception as exc:
            log.exception("output replacer %s failed; the output passes untouched", replacer.name)
            outcome = Replacement(None, f"error:{type(exc).__name__}")
        if outcome.output is not None:
            return replacer, outcome
        first = first or outcome
    return None, first or Replacement(None, "no-replacer")


def reply_bytes(outcome: Replacement) -> bytes:
    return b"" if outcome.output is None else json.dumps(outcome.output, ensure_ascii=False).encode() + b"\n"


# -- accounting -----------------------------------------------------------------------------------------------
def count_pass(app: Context, outcome: Replacement) -> None:
    """An output the hook asked about and left untouched (never counted as savings)."""
    try:
        app.store.bump(f"replace:untouched:{outcome.reason}")
    except Exception:
        log.exception("cannot count an untouched output")
