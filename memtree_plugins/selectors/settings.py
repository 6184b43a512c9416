"""The selectors plugin's settings: ``capture.replace`` (its output replacer's switch, thresholds, budget and
the hook's timeout); the host owns the section's other keys, and the filters plugin ``capture.filterMinSize``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

from pydantic import Field

from memtree_core.plugin_settings import BuiltinSettings, Section, UserOnly
from memtree_core.settings import WHAT_IS_CAPTURED, Flag

if TYPE_CHECKING:
    from memtree_core.context import Context


class ReplaceThresholds(Section):
    bash: int = Field(2000, ge=0, alias="Bash")
    grep: int = Field(2000, ge=0, alias="Grep")
    # accepted but never applied: Read output is not replaced (README: an Edit needs what the model read).
    read: int = Field(0, ge=0, alias="Read")


class Replace(Section):
    enabled: Flag = False
    thresholds: ReplaceThresholds = ReplaceThresholds()
    budget_tokens: int = Field(800, ge=50)
    # the synchronous hook waits this long for the ingest socket's answer, then lets the output through.
    timeout_ms: int = Field(150, ge=10)


class ReplaceCapture(Section):
    # The user's alone: it changes what the model sees of every long Bash and Grep output.
    replace: Annotated[Replace, UserOnly(WHAT_IS_CAPTURED)] = Replace()


class SelectorsSettings(BuiltinSettings):
    capture: ReplaceCapture = ReplaceCapture()


def replace_settings(app: Context) -> Replace:
    """``capture.replace`` as the selectors plugin reads it, or its defaults (off) where the plugin is not
    loaded (``memtree info`` still reports it, and the replacer's modules serve tests and benchmarks)."""
    own = app.plugin_settings("selectors")
    return own.capture.replace if own is not None else Replace()
