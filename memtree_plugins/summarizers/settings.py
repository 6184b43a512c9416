"""The summarizers plugin's settings: ``summarizerModel`` and ``summarizer`` (the paid API's limits)."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from memtree_core.plugin_settings import BuiltinSettings, Section, UserOnly

OFF_MACHINE = UserOnly("it can send data off this machine or spend on a paid API")


class Summarizer(Section):
    daily_cap: int = Field(200, ge=0)
    requests_per_minute: int = Field(20, ge=1)


class SummarizersSettings(BuiltinSettings):
    summarizer_model: Annotated[str, OFF_MACHINE] = "claude-haiku-4-5"
    summarizer: Annotated[Summarizer, OFF_MACHINE] = Summarizer()
