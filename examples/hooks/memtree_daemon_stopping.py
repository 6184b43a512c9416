"""An example plugin for ``memtree_daemon_stopping`` (docs/hooks.md shows it; a test loads it)."""

from memtree_core.hookspecs import hookimpl


@hookimpl
def memtree_daemon_stopping(app):
    # The daemon is going: the status-bar script must not show it any more.  Called twice: missing_ok.
    (app.paths.dir / "statusbar.pid").unlink(missing_ok=True)
