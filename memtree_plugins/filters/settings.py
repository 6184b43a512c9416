"""The filters plugin's settings: ``capture.filterMinSize`` (the host owns the section's other keys)."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from memtree_core.plugin_settings import REPO_SAFE, BuiltinSettings, Section


class FilterCapture(Section):
    # captures smaller than this many bytes are not stored; a repository may tune it for its own outputs.
    filter_min_size: Annotated[int, Field(ge=0, le=100_000), REPO_SAFE] = 50


class FiltersSettings(BuiltinSettings):
    capture: FilterCapture = FilterCapture()
