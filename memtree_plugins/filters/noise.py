"""Drop tool output that is nothing but terminal noise.

What counts as noise, after ANSI/OSC escapes are removed and each carriage-return-overwritten line is
reduced to what a terminal would finally show: spinner and progress-bar glyphs, box-drawing and block
characters, punctuation, percentages, ``n/m`` counters, byte/item rates (``3.2MB/s``, ``12it/s``),
durations (``00:12``, ``1.5s``) and whitespace.  If anything else is left — a single letter of real text, a
bare number — the capture is kept: a false drop loses data, a false keep only costs a little space.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from memtree_core.context import Context
    from memtree_core.store import NodeRow

_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]"  # CSI: colours, cursor moves, erase line
                   r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)"  # OSC: titles, hyperlinks
                   r"|\x1b[@-Z\\-_]")  # two-byte escapes
_PROGRESS_TOKENS = re.compile(
    r"\d+(?:\.\d+)?\s?%"  # 45% / 45.5 %
    r"|\d+(?:\.\d+)?\s?[kKMGT]?(?:i?B|it|s)/s"  # rates: 3.2MB/s, 12it/s, 1.1s/it is below
    r"|\d+(?:\.\d+)?\s?s/it"
    r"|\d+(?:\.\d+)?[kKMGT]?i?B?/\d+(?:\.\d+)?[kKMGT]?i?B?"  # counters: 10/100, 3.1MB/10MB
    r"|\d+(?::\d\d)+"  # timers: 00:12, 1:02:03
    r"|\d+(?:\.\d+)?(?:ms|s)\b"  # durations: 1.5s, 300ms
    r"|\beta\b|\bETA\b"
)
# Anything left that is a letter or digit (in any script) is real content.
_CONTENT = re.compile(r"[^\W_]")


def final_screen(text: str) -> str:
    """What a terminal shows: escapes removed, each line reduced to the text after its last ``\\r``."""
    text = _ANSI.sub("", text)
    return "\n".join(line.rsplit("\r", 1)[-1] for line in text.replace("\r\n", "\n").split("\n"))


def is_noise(text: str) -> bool:
    if not text.strip():
        return True
    visible = final_screen(text)
    return _CONTENT.search(_PROGRESS_TOKENS.sub(" ", visible)) is None


class NoiseFilter:
    name = "noise"

    def check(self, node: NodeRow, app: Context) -> str | None:
        if node.kind != "tool_output":
            return None
        return "noise" if is_noise(node.content) else None
