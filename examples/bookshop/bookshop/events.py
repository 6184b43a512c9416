"""A tiny in-process publish/subscribe bus for order events."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable

Handler = Callable[[str], None]


class EventBus:
    def __init__(self) -> None:
        self._handlers: dict[str, list[Handler]] = defaultdict(list)

    def subscribe(self, topic: str, handler: Handler) -> None:
        """Call ``handler(payload)`` for every event published on ``topic``."""
        self._handlers[topic].append(handler)

    def publish(self, topic: str, payload: str) -> int:
        """Deliver to every subscriber; a failing subscriber does not stop the others."""
        delivered = 0
        for handler in list(self._handlers[topic]):
            try:
                handler(payload)
                delivered += 1
            except Exception:  # noqa: BLE001 - one bad subscriber must not break checkout
                continue
        return delivered
