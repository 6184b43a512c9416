"""Built-in summarizers for the ``summarizer`` walker: ``anthropic`` (needs ANTHROPIC_API_KEY; rate-limited
and capped per day) and ``extractive`` (needs nothing).  The walker uses the first available one in
registration order; both are ``trylast`` so a third-party summarizer comes first, and extractive is
registered last so it is the fallback that always works."""

from __future__ import annotations

from typing import Any

from memtree_core.hookspecs import hookimpl
from memtree_core.plugin_settings import BuiltinSettings
from memtree_plugins.summarizers.anthropic import AnthropicSummarizer
from memtree_plugins.summarizers.extractive import ExtractiveSummarizer


@hookimpl(trylast=True)
def memtree_settings_model() -> type[BuiltinSettings]:
    # ``summarizerModel`` and ``summarizer``: memtree_plugins.summarizers.settings
    from memtree_plugins.summarizers.settings import SummarizersSettings

    return SummarizersSettings


@hookimpl(trylast=True)
def memtree_register_summarizers(register: Any) -> None:
    register(AnthropicSummarizer())
    register(ExtractiveSummarizer())
