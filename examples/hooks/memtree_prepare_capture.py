"""An example plugin for ``memtree_prepare_capture`` (docs/hooks.md shows it; a test loads it)."""

from memtree_core.daemon.ingest import Refused
from memtree_core.hookspecs import hookimpl


@hookimpl(tryfirst=True)
def memtree_prepare_capture(app, payload):
    path = (payload.get("tool_input") or {}).get("file_path") or ""
    if path.endswith(".lock"):
        raise Refused("lockfile")  # counted as capture:dropped:lockfile
    return None  # the built-in pipeline does the rest
