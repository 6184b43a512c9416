"""The Ollama embedder: HTTP to a local Ollama (``ollamaUrl``), stdlib ``urllib`` only, short timeouts.

A soft dependency: when Ollama does not answer or lacks the model, ``available()`` says so in
one line (``memtree info`` shows it) and semantic search falls back to keyword search.
"""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memtree_core.context import Context

# Known output sizes, so ``dim`` is right before the first call; others are learnt from the first reply.
KNOWN_DIMS = {"nomic-embed-text": 768, "mxbai-embed-large": 1024, "all-minilm": 384, "snowflake-arctic-embed": 1024}
PROBE_TIMEOUT_S = 0.5
EMBED_TIMEOUT_S = 30.0
PROBE_TTL_S = 30.0  # a search must not pay a probe each time


class OllamaEmbedder:
    name = "ollama"

    def __init__(self, model: str = "nomic-embed-text", url: str = "http://127.0.0.1:11434",
                 batch_size: int = 32) -> None:
        self.model = model
        self.url = url.rstrip("/")
        self.batch_size = batch_size
        self.dim = KNOWN_DIMS.get(model.split(":")[0], 0)
        self._probe: tuple[float, bool, str] | None = None
        self._lock = threading.Lock()

    def configure(self, settings: Any, app: Context) -> None:
        """Take ``ollamaUrl`` (this plugin's), the batch size and the model (the semantic plugin's, unless
        ``embeddingModel`` names another embedder or ``auto``, which mean nomic-embed-text here)."""
        from memtree_plugins.embedders.semantic_keys import batch_size, embedding_model

        model = embedding_model(app)
        if model in ("", "auto", "local", "ollama", "all-MiniLM-L6-v2"):
            model = "nomic-embed-text"
        url = settings.ollama_url.rstrip("/")
        if (model, url) != (self.model, self.url):
            with self._lock:
                self.model, self.url, self._probe = model, url, None
                self.dim = KNOWN_DIMS.get(model.split(":")[0], 0)
        self.batch_size = batch_size(app)

    def _post(self, path: str, body: dict[str, Any], timeout: float) -> Any:
        req = urllib.request.Request(self.url + path, data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"}, method="POST")
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return json.loads(resp.read())

    def available(self) -> tuple[bool, str]:
        with self._lock:
            if self._probe and time.monotonic() - self._probe[0] < PROBE_TTL_S:
                return self._probe[1], self._probe[2]
            ok, reason = self._check()
            self._probe = (time.monotonic(), ok, reason)
            return ok, reason

    def _check(self) -> tuple[bool, str]:
        try:
            with urllib.request.urlopen(self.url + "/api/tags", timeout=PROBE_TIMEOUT_S) as resp:
                tags = json.loads(resp.read())
        except (urllib.error.URLError, OSError, ValueError) as exc:
            why = getattr(exc, "reason", exc)
            return False, (f"Ollama is not reachable at {self.url} ({why}); start it (ollama serve) "
                           f"or set ollamaUrl")
        names = {str(m.get("name", "")) for m in tags.get("models", []) if isinstance(m, dict)}
        if not any(n == self.model or n.split(":")[0] == self.model for n in names):
            return False, f"Ollama at {self.url} has no model {self.model!r}; run: ollama pull {self.model}"
        return True, ""

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        out: list[list[float]] = []
        for i in range(0, len(texts), self.batch_size):
            try:
                reply = self._post("/api/embed", {"model": self.model, "input": list(texts[i:i + self.batch_size])},
                                   EMBED_TIMEOUT_S)
            except (urllib.error.URLError, OSError, ValueError) as exc:
                with self._lock:
                    self._probe = None  # re-probe next time
                raise RuntimeError(f"Ollama embedding failed at {self.url}: {exc}") from exc
            vectors = reply.get("embeddings") or []
            if len(vectors) != len(texts[i:i + self.batch_size]):
                raise RuntimeError(f"Ollama returned {len(vectors)} embeddings for "
                                   f"{len(texts[i:i + self.batch_size])} texts")
            out.extend([float(x) for x in v] for v in vectors)
        if out and not self.dim:
            self.dim = len(out[0])
        return out
