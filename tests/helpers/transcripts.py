"""A Claude Code transcript fixture with a real-looking secret, and what a project's store holds."""

from __future__ import annotations

import json
from pathlib import Path

from helpers.daemon import project_paths
from memtree_core.store import Store

FIXTURE = Path(__file__).resolve().parents[1] / "data" / "claude-code-transcripts" / "session.jsonl"
TOKEN = "ghp_" + "Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3i2"  # assembled, so no scanner flags this file


def transcript(dest: Path, cwd: str | None = None, tag: str = "") -> Path:
    """The fixture with the secret in place, optionally moved to another cwd and with its ids tagged."""
    text = FIXTURE.read_text().replace("@@TOKEN@@", TOKEN)
    if cwd is not None:
        text = text.replace('"/home/dev/shop', json.dumps(cwd)[:-1])
    if tag:
        text = text.replace('"toolu_tr_', f'"toolu_tr_{tag}')
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text(text)
    return dest


def stored(project: Path) -> list[tuple[str, str]]:
    store = Store.open(project_paths(project).store, vectors=False)
    try:
        rows = store.query("SELECT metadata, content FROM nodes")
    finally:
        store.close()
    return [(json.loads(m).get("tool_use_id", ""), c) for m, c in rows]
