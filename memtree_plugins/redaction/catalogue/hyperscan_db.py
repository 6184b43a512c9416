"""A Hyperscan database of the catalogue, used as a prefilter in front of RE2 when one is cached.

Not yet built by anything: :func:`cached_prefilter` answers None and the catalogue runs on RE2 alone."""

from __future__ import annotations

from typing import Any


def cached_prefilter(engine: Any) -> None:
    return None
