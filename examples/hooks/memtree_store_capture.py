"""An example plugin for ``memtree_store_capture`` (docs/hooks.md shows it; a test loads it)."""

import json

from memtree_core.hookspecs import hookimpl


@hookimpl(tryfirst=True)
def memtree_store_capture(app, payload, prepared, replayed):
    # Keep an audit trail of what was captured (redacted already: no secret reaches this file) ...
    with open(app.paths.dir / "captures.jsonl", "a") as log:
        for capture in prepared.captures:
            log.write(json.dumps({"tool": payload.get("tool_name"), "uri": capture.source_uri,
                                  "bytes": len(capture.content), "replayed": replayed}) + "\n")
    return None  # ... and let the built-in store it
