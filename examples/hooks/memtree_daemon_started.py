"""An example plugin for ``memtree_daemon_started`` (docs/hooks.md shows it; a test loads it)."""

import os

from memtree_core.hookspecs import hookimpl


@hookimpl
def memtree_daemon_started(app):
    # Tell a status-bar script which daemon serves this project (its stopping hook removes the file).
    (app.paths.dir / "statusbar.pid").write_text(f"{os.getpid()}\n")
