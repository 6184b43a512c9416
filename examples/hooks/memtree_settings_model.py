"""An example plugin for ``memtree_settings_model`` (docs/hooks.md shows it; a test loads it)."""

from typing import Annotated

from pydantic import Field

from memtree_core.hookspecs import hookimpl
from memtree_core.plugin_settings import REPO_SAFE, PluginSettings


class AcmeSettings(PluginSettings):
    max_hits: Annotated[int, Field(ge=1, le=50), REPO_SAFE] = 10  # a repository may set this one
    endpoint: str = "http://127.0.0.1:9"  # only the user may


@hookimpl
def memtree_settings_model():
    return AcmeSettings  # read back with app.plugin_settings("acme")
