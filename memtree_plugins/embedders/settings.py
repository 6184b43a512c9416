"""The embedders plugin's settings: ``ollamaUrl``, where the Ollama embedder sends file text."""

from __future__ import annotations

from typing import Annotated
from urllib.parse import urlsplit

from pydantic import AfterValidator

from memtree_core.plugin_settings import BuiltinSettings, UserOnly

OFF_MACHINE = "it can send data off this machine or spend on a paid API"


def _http_url(value: str) -> str:
    # The embedder POSTs file text there: it must be a plain http(s) endpoint, not file:// or a typo.
    try:
        parts = urlsplit(value)
        _ = parts.port  # a port that is not a number raises here
        ok = parts.scheme in ("http", "https") and bool(parts.hostname)
    except ValueError:
        ok = False
    if not ok:
        raise ValueError("must be an http:// or https:// URL with a host, e.g. http://127.0.0.1:11434")
    return value


class EmbeddersSettings(BuiltinSettings):
    # A top-level key's checks go in its type (a validator method would stay behind in this class when the
    # key joins the project's settings model).
    ollama_url: Annotated[str, AfterValidator(_http_url), UserOnly(OFF_MACHINE)] = "http://127.0.0.1:11434"
