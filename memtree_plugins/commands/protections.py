"""What ``memtree info`` puts in its WARNING block: anything that weakens what protects the user's data.

A refused repository key, redaction off or unavailable, content going to another machine, and everything
else that is degraded.  Each line says what and why, in words a user can act on.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memtree_plugins.commands import destinations

if TYPE_CHECKING:
    from memtree_core.context import Context


def warnings(app: Context, degraded: list[str]) -> list[str]:
    from memtree_core.daemon.redaction_gate import state_warning

    out = [line for line in [state_warning(app)] if line]
    for dest in destinations.in_effect(app):
        if dest.active and not dest.local:
            out.append(f"content leaves this machine: {dest.describe()}")
    out.extend(d for d in degraded if d not in out)
    return out
