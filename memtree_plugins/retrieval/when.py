"""Times as a user or an agent writes them: epoch ms, ISO 8601, or an age such as ``30m``, ``2h``, ``7d``."""

from __future__ import annotations

import re
import time
from datetime import UTC, datetime

_AGE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|sec|m|min|h|hr|d|day|days|w)\s*(?:ago)?\s*$", re.IGNORECASE)
_UNIT_MS = {"s": 1000, "sec": 1000, "m": 60_000, "min": 60_000, "h": 3_600_000, "hr": 3_600_000,
            "d": 86_400_000, "day": 86_400_000, "days": 86_400_000, "w": 7 * 86_400_000}


def parse_time(value: str | int | float | None, name: str = "time") -> int | None:
    """Epoch milliseconds for ``value``; None stays None.  Raises ValueError naming the accepted forms."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if isinstance(value, bool):
        raise ValueError(f"{name} must be a time, not {value!r}")
    if isinstance(value, (int, float)):
        v = int(value)
        # Seconds are a common slip: anything before 1973 in ms but plausible in seconds is scaled.
        return v * 1000 if 0 < v < 100_000_000_000 else v
    text = str(value).strip()
    if re.fullmatch(r"-?\d+", text):
        return parse_time(int(text), name)
    m = _AGE.match(text)
    if m:
        return int(time.time() * 1000 - float(m.group(1)) * _UNIT_MS[m.group(2).lower()])
    try:
        dt = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"{name}={value!r} is not a time; use epoch milliseconds, ISO 8601 "
                         "(2026-05-17T10:00:00Z) or an age like 30m, 2h, 7d") from None
    if dt.tzinfo is None:
        dt = dt.astimezone()  # a naive time is local time
    return int(dt.astimezone(UTC).timestamp() * 1000)
