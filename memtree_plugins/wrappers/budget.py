"""Cut text to a token budget: longest head, longest tail, or head + marker + tail; line-aware.

Shared by the wrapped tools (read, grep, bash, get) and meant for reuse by retrieval and output
replacement.  ``count`` is whatever counter enforces budgets (``app.count_tokens``); nothing here assumes a
particular tokenizer, only that a longer prefix rarely counts fewer tokens.  Every function checks its
final answer with ``count`` itself, so a result never exceeds the budget even when the counter is not
additive (joining two strings can cost one token more than the parts).

Line-aware means: prefer a cut at a line boundary, unless that keeps less than half of what a cut
inside the line would keep (a minified file's one huge line still yields something).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

Count = Callable[[str], int]

# Most tokenizers and the default estimator give well under 8 characters per token; the first probe
# uses that guess and grows from there, so cutting a 100 MB string to 500 tokens never counts 100 MB.
_CHARS_PER_TOKEN_GUESS = 8


def _largest(n: int, fits: Callable[[int], bool], guess: int) -> int:
    """Largest k in 0..n-1 with fits(k), given fits(0) and not fits(n); fits is (mostly) monotone."""
    lo, hi = 0, n
    probe = max(guess, 1)
    # Grow the probe until it no longer fits: keeps the searched range close to the answer.
    while probe < hi and fits(probe):
        lo = probe
        probe *= 2
    hi = min(probe, hi)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if fits(mid):
            lo = mid
        else:
            hi = mid
    return lo


def fit_prefix(text: str, budget: int, count: Count, line_aware: bool = True) -> str:
    """The longest prefix of ``text`` that counts at most ``budget`` tokens."""
    if budget <= 0 or not text:
        return ""
    if count(text) <= budget:
        return text
    k = _largest(len(text), lambda i: count(text[:i]) <= budget, budget * _CHARS_PER_TOKEN_GUESS)
    if line_aware:
        nl = text.rfind("\n", 0, k)
        if nl >= 0 and nl + 1 >= k // 2:
            k = nl + 1
    while k and count(text[:k]) > budget:  # a counter that is not monotone: back off
        k -= max(1, k // 64)
    return text[:k]


def fit_suffix(text: str, budget: int, count: Count, line_aware: bool = True) -> str:
    """The longest suffix of ``text`` that counts at most ``budget`` tokens."""
    if budget <= 0 or not text:
        return ""
    if count(text) <= budget:
        return text
    n = len(text)
    k = _largest(n, lambda i: count(text[n - i:]) <= budget, budget * _CHARS_PER_TOKEN_GUESS)
    if line_aware and k and text[n - k - 1] != "\n":
        nl = text.find("\n", n - k)
        if nl != -1 and nl + 1 < n and n - (nl + 1) >= k // 2:
            k = n - (nl + 1)
    while k and count(text[n - k:]) > budget:
        k -= max(1, k // 64)
    return text[n - k:] if k else ""


@dataclass(frozen=True)
class Cut:
    """A text cut to a budget: what is kept, and what was left out of the middle."""

    text: str
    truncated: bool
    omitted_chars: int = 0
    omitted_lines: int = 0


def omission_marker(chars: int, lines: int) -> str:
    return f"\n[… {lines:,} lines / {chars:,} chars omitted …]\n"


def head_tail(text: str, budget: int, count: Count, head_share: float = 0.4,
              marker: Callable[[int, int], str] = omission_marker) -> Cut:
    """Keep a head and a tail of ``text`` joined by an omission marker, within ``budget`` tokens.

    The tail gets the larger share by default: errors, summaries and exit messages come last.
    """
    if budget <= 0 or not text:
        return Cut("", bool(text), len(text), text.count("\n"))
    if count(text) <= budget:
        return Cut(text, False)
    worst = marker(len(text), text.count("\n") + 1)
    room = budget - count(worst)
    if room <= 0:
        head = fit_prefix(text, budget, count)
        return Cut(head, True, len(text) - len(head), text.count("\n", len(head)))
    head = fit_prefix(text, int(room * head_share), count)
    rest = text[len(head):]
    tail = fit_suffix(rest, room - count(head), count)
    while True:
        middle = rest[: len(rest) - len(tail)] if tail else rest
        joined = head + marker(len(middle), middle.count("\n")) + tail
        if count(joined) <= budget or not (head or tail):
            break
        # Non-additive counter: give back a little from the longer side and try again.
        if len(tail) >= len(head):
            tail = tail[max(1, len(tail) // 10):]
        else:
            head = head[: len(head) - max(1, len(head) // 10)]
    return Cut(joined, True, len(middle), middle.count("\n"))
