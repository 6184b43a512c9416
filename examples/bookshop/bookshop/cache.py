"""An LRU cache with a time-to-live, used for book pages and search results."""

from __future__ import annotations

import time
from collections import OrderedDict
from typing import Any


class TTLCache:
    """Least-recently-used eviction plus per-entry expiry."""

    def __init__(self, capacity: int = 1024, ttl_s: float = 300.0, clock=time.monotonic) -> None:
        self.capacity = capacity
        self.ttl_s = ttl_s
        self.clock = clock
        self._data: OrderedDict[str, tuple[float, Any]] = OrderedDict()
        self.hits = 0
        self.misses = 0

    def get(self, key: str) -> Any | None:
        item = self._data.get(key)
        if item is None or item[0] < self.clock():
            self._data.pop(key, None)
            self.misses += 1
            return None
        self._data.move_to_end(key)
        self.hits += 1
        return item[1]

    def put(self, key: str, value: Any) -> None:
        self._data[key] = (self.clock() + self.ttl_s, value)
        self._data.move_to_end(key)
        while len(self._data) > self.capacity:
            self._data.popitem(last=False)

    def invalidate_prefix(self, prefix: str) -> int:
        """Drop every entry whose key starts with ``prefix`` (e.g. all pages of one author)."""
        doomed = [k for k in self._data if k.startswith(prefix)]
        for key in doomed:
            del self._data[key]
        return len(doomed)
