"""Errors a user sees as one clear line (the CLI prints them without a traceback)."""

from memtree_core.daemon.redaction_gate import RedactionUnavailable
from memtree_core.forwarder.paths import UnsafeSocketDir
from memtree_core.plugins import PluginLoadError
from memtree_core.settings import SettingsError
from memtree_core.store import StoreError


class NotFound(Exception):
    """A node, file or daemon the user named does not exist."""


class Stopping(Exception):
    """The daemon is stopping: no new tool command is started (raised by the plugin that runs commands)."""


class UsageError(Exception):
    """An argument or setting a command cannot use, or a run that failed for a reason the user can act on."""


UserFacingError = (SettingsError, StoreError, PluginLoadError, NotFound, UsageError, UnsafeSocketDir,
                   RedactionUnavailable, Stopping)
