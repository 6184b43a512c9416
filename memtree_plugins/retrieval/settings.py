"""The retrieval plugin's settings: ``search`` (its ranker and default limit, both a repository's to choose)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

from pydantic import Field

from memtree_core.plugin_settings import REPO_SAFE, BuiltinSettings, Section

if TYPE_CHECKING:
    from memtree_core.context import Context


class Search(Section):
    ranker: Annotated[str, REPO_SAFE] = "shaped"  # fusion by query shape (memtree_plugins/lib/fusion.py)
    default_limit: Annotated[int, Field(ge=1, le=200), REPO_SAFE] = 10


class RetrievalSettings(BuiltinSettings):
    search: Search = Search()


def search_settings(app: Context) -> Search:
    """``search``, or its defaults where the retrieval plugin is not loaded (another plugin may serve search,
    and the inspector runs its functions)."""
    own = app.plugin_settings("retrieval")
    return own.search if own is not None else Search()
