"""Redaction fails closed: when no redaction rules are in effect, nothing is stored.

memtree keeps everything an agent sees, so a store written without redaction would hold raw secrets.  The
gate is open when the built-in redaction plugin loaded and at least one rule is registered, or when the user's
own config (or environment) set ``redaction.enabled`` to false: a repository cannot (see
:mod:`memtree_core.settings`).  Otherwise every place that stores refuses: hook captures are acked
``{"ok": false, "reason": "redaction-unavailable"}``, the ``bash`` tool runs the command but says its output
was not stored, and ``read``/``grep`` answer with a tool error.  ``memtree info`` gives the same reason.

A rule that raises while redacting closes the gate for that text only: whatever it was meant to catch may
still be in there, so that text is not stored either.  So does a big text whose redaction runs past its
deadline (:data:`DEADLINE_S`): refused with a reason, never stored half-redacted.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

from memtree_core.daemon.redacting import Redacted, TooSlow, stopping
from memtree_core.daemon.redacting import redact as redact_all

REASON = "redaction-unavailable"
BUILTIN = "redaction"  # the built-in plugin's short name (memtree_plugins.BUILTINS)


class RedactionUnavailable(Exception):
    """Text could not be redacted, so it must not be stored; the message says why in one line."""

    reason = REASON

    def __init__(self, why: str) -> None:
        super().__init__(f"nothing was stored: redaction is unavailable ({why})")
        self.why = why


class RedactionTooSlow(RedactionUnavailable):
    """A big text whose redaction did not finish in :data:`DEADLINE_S`: refused, not kept half-judged."""

    def __init__(self, size: int) -> None:
        Exception.__init__(self, f"nothing was stored: redacting this {size / 2**20:.1f} MB text took longer than "
                           f"{DEADLINE_S:g} s (it is dense with secret-like keywords), so it was refused rather than "
                           f"returned or kept half-redacted; split it into smaller files to read it through memtree")
        self.why = f"redaction took longer than {DEADLINE_S:g} s"


# Texts over BIG_TEXT (an MCP read of a whole file, up to 20 MB) get DEADLINE_S to be redacted: a hostile
# file must not hold a tool call, and the daemon, for minutes.  Real code redacts at ~7 MB/s; captures are
# cut to 100 kB before they get here.
BIG_TEXT = 1 << 20
DEADLINE_S = 4.0


def unavailable_reason(settings: Any, plugins: Any) -> str | None:
    """Why redaction cannot run for this project, or None when it can (or the user turned it off)."""
    if not settings.redaction.enabled:
        return None
    builtin = plugins.info(BUILTIN)
    if builtin is not None and builtin.status == "failed":
        return (f"the built-in redaction plugin failed to load: {builtin.error}; reinstall memtree, or set "
                f"redaction.enabled=false in your own config to store without redaction")
    if len(plugins.redaction_rules):
        # A rule that reports it cannot run (the secret catalogue could not load) closes the gate too.
        for entry in plugins.redaction_rules.entries():
            report = getattr(entry.item, "availability", None)
            try:
                why = next((w for w in report().values() if w), None) if callable(report) else None
            except Exception as exc:
                why = f"its availability() raised {type(exc).__name__}: {exc}"
            if why:
                return f"{why} (rule {entry.name!r} from plugin {entry.plugin})"
        return None
    if builtin is not None and builtin.status == "disabled":
        return ("the built-in redaction plugin is disabled (MEMTREE_DISABLE_PLUGINS or your plugins.disable) "
                "and no other plugin registers a rule; set redaction.enabled=false in your own config to store "
                "without redaction")
    if builtin is None:
        return "the built-in redaction plugin is not part of this build and no plugin registers a rule"
    return "no redaction rules are registered (a plugin removed them all)"


def redact(settings: Any, plugins: Any, text: str) -> Redacted:
    """Apply every rule in order to the whole text, keeping its line count (:mod:`memtree_core.daemon.redacting`);
    the result names hits per rule (never values).

    Raise :class:`RedactionUnavailable` when the gate is closed or a rule fails on this text."""
    if not settings.redaction.enabled:
        return Redacted(text)
    why = unavailable_reason(settings, plugins)
    if why is not None:
        raise RedactionUnavailable(why)
    deadline = time.monotonic() + DEADLINE_S if len(text) > BIG_TEXT else None
    try:
        return redact_all(_guarded(plugins.redaction_rules.entries()), text, deadline)
    except TooSlow:
        if stopping():
            raise RedactionUnavailable("the daemon is stopping") from None
        raise RedactionTooSlow(len(text)) from None


class _Guarded:
    """A rule whose failure closes the gate for the text at hand instead of passing it through raw."""

    def __init__(self, entry: Any) -> None:
        self.entry = entry
        self.name = entry.name

    def redact(self, text: str) -> tuple[str, int]:
        try:
            return self.entry.item.redact(text)
        except TooSlow:
            raise
        except Exception as exc:
            raise RedactionUnavailable(f"rule {self.entry.name!r} from plugin {self.entry.plugin} failed: "
                                       f"{type(exc).__name__}: {exc}") from exc


def _guarded(entries: Any) -> Iterator[_Guarded]:
    for entry in entries:
        yield _Guarded(entry)


def state_warning(app: Any) -> str | None:
    """The one line a user must see when redaction does not protect what is stored, or None: nothing is stored
    for want of it, or the user turned it off (``memtree info`` and ``memtree doctor`` both say it)."""
    why = app.redaction_unavailable
    if why:
        return f"NOTHING IS STORED: redaction is unavailable ({why})"
    if not app.settings.redaction.enabled:
        return (f"redaction is OFF (redaction.enabled = false, set by {app.loaded.origin('redaction.enabled')}): "
                f"secrets are stored as they are; remove that setting to turn it back on")
    return None
