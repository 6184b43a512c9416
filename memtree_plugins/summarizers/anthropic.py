"""Summaries from the Anthropic Messages API (``summarizerModel``, ``ANTHROPIC_API_KEY``), stdlib urllib.

A soft dependency: without a key ``available()`` says so and the next summarizer (extractive)
is used.  Spending is bounded twice: ``summarizer.requestsPerMinute`` (a sliding window in this process)
and ``summarizer.dailyCap`` (calls per UTC day, kept in store counters so restarts do not reset it).
"""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request
from collections import deque
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memtree_core.context import Context

API_URL = "https://api.anthropic.com/v1/messages"
API_VERSION = "2023-06-01"
TIMEOUT_S = 30.0
MAX_INPUT_CHARS = 60_000
PROMPT = ("Summarize these related pieces of a coding session's context (file chunks, tool outputs) for an "
          "engineer who will decide whether to read them in full. Be concise: what they are, the key "
          "symbols, facts and any errors. Plain text, at most 200 words.\n\n")


def day_counter(now: float | None = None) -> str:
    return "summarizer:anthropic:calls:" + time.strftime("%Y-%m-%d", time.gmtime(now))


class AnthropicSummarizer:
    name = "anthropic"
    # Where stored content goes, and the variable without which nothing is sent (memtree info lists both).
    url = API_URL
    requires_env = "ANTHROPIC_API_KEY"

    def __init__(self) -> None:
        self.environ: dict[str, str] = {}
        self.model = "claude-haiku-4-5"
        self.per_minute = 20
        self.daily_cap = 200
        self.app: Context | None = None
        self._calls: deque[float] = deque()
        self._lock = threading.Lock()

    def configure(self, settings: Any, app: Context) -> None:
        self.app = app
        self.environ = app.environ
        own = settings
        self.model = own.summarizer_model
        self.per_minute = own.summarizer.requests_per_minute
        self.daily_cap = own.summarizer.daily_cap

    def available(self) -> tuple[bool, str]:
        if not self.environ.get("ANTHROPIC_API_KEY"):
            return False, "ANTHROPIC_API_KEY is not set (the extractive summarizer is used instead)"
        if self.app is not None and self.daily_cap >= 0:
            used = self.app.store.counters(day_counter()).get(day_counter(), 0)
            if used >= self.daily_cap:
                return False, f"daily cap of {self.daily_cap} summarizer calls reached (summarizer.dailyCap)"
        with self._lock:
            now = time.monotonic()
            while self._calls and now - self._calls[0] > 60:
                self._calls.popleft()
            if len(self._calls) >= self.per_minute:
                return False, f"rate limit of {self.per_minute}/min reached (summarizer.requestsPerMinute)"
        return True, ""

    def summarize(self, nodes: Sequence[Any], app: Context) -> str:
        body = "\n\n".join(f"--- {n.kind} {n.source_uri or n.id}\n{n.content}" for n in nodes)[:MAX_INPUT_CHARS]
        req = urllib.request.Request(API_URL, method="POST", data=json.dumps({
            "model": self.model, "max_tokens": 400,
            "messages": [{"role": "user", "content": PROMPT + body}]}).encode(), headers={
            "x-api-key": self.environ.get("ANTHROPIC_API_KEY", ""), "anthropic-version": API_VERSION,
            "content-type": "application/json"})
        with self._lock:
            self._calls.append(time.monotonic())
        app.store.bump(day_counter())
        try:
            with urllib.request.urlopen(req, timeout=TIMEOUT_S) as resp:
                reply = json.loads(resp.read())
        except (urllib.error.URLError, OSError, ValueError) as exc:
            raise RuntimeError(f"Anthropic API call failed: {exc}") from exc
        text = "".join(b.get("text", "") for b in reply.get("content", []) if isinstance(b, dict))
        if not text.strip():
            raise RuntimeError("Anthropic API returned no text")
        return text.strip()
