"""The walker coordinator (placeholder until the walkers work lands: idles)."""

from __future__ import annotations

import threading
from typing import Any


class Coordinator:
    def __init__(self, app: Any) -> None:
        self.app = app

    def tick(self) -> dict[str, dict[str, int]]:
        return {}

    def run(self, stop: threading.Event, tick_s: float = 0.25) -> None:
        while not stop.wait(tick_s):
            self.tick()
