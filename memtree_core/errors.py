"""Errors a user sees as one clear line (the CLI prints them without a traceback)."""

from memtree_core.plugins import PluginLoadError
from memtree_core.redaction_gate import RedactionUnavailable
from memtree_core.settings import SettingsError
from memtree_core.store import StoreError


class NotFound(Exception):
    """A node, file or daemon the user named does not exist."""


UserFacingError = (SettingsError, StoreError, PluginLoadError, NotFound, RedactionUnavailable)
