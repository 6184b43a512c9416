"""The wrappers plugin's settings: ``budgets`` (each tool's default answer size, a repository's to choose) and
``plugins.config.wrappers`` (user-only)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from memtree_core.plugin_settings import REPO_SAFE, BuiltinSettings, PluginSettings, Section

MAX_BUDGET = 200_000  # tokens; more than any context window holds
# tokens; below this a tool's own header may not fit, and every call would fail (a repository sets budgets)
MIN_BUDGET = 200


class Budgets(Section):
    read: int = Field(2000, ge=MIN_BUDGET, le=MAX_BUDGET)
    bash: int = Field(1000, ge=MIN_BUDGET, le=MAX_BUDGET)
    grep: int = Field(1000, ge=MIN_BUDGET, le=MAX_BUDGET)
    get: int = Field(2000, ge=MIN_BUDGET, le=MAX_BUDGET)


class WrapperSettings(PluginSettings):
    """``plugins.config.wrappers`` (user-only: nothing here is repo-safe)."""

    # Which engine grep runs: ripgrep when it is installed ("auto"), always ripgrep ("rg"), or the Python
    # fallback ("python").  MEMTREE_GREP_ENGINE, when set, still wins (scripts and benchmarks use it).
    grep_engine: Literal["auto", "rg", "ripgrep", "python"] = "auto"


class WrappersSettings(BuiltinSettings):
    budgets: Annotated[Budgets, REPO_SAFE] = Budgets()
    config: WrapperSettings = WrapperSettings()
