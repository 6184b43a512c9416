"""The stats page says how far the background embedding has come, as ``memtree stats`` does."""

from __future__ import annotations

from pathlib import Path

import pytest

from memtree_core.app import App
from memtree_plugins.inspector import pages
from memtree_plugins.inspector.readonly import ReadOnlyApp
from memtree_plugins.lib.embedder_choice import EMBED_MS_COUNTER, EMBEDDED_COUNTER


def test_the_stats_page_shows_the_embedding_backlog_and_rate(home: Path, project: Path) -> None:
    app = App.open(project)
    try:
        if not app.store.vector.available:
            pytest.skip(f"vector search is off here: {app.store.vector.reason}")
        ids = [app.store.insert_node("note", f"note {i}", status_="live").id for i in range(4)]
        app.store.vector_upsert([(ids[0], [1.0] + [0.0] * 383)], "minilm-test", 384)
        app.store.bump(EMBEDDED_COUNTER, 10)
        app.store.bump(EMBED_MS_COUNTER, 2000)
    finally:
        app.close()
    ro = ReadOnlyApp.of(App.open(project))
    try:
        body = pages.stats(ro, {}).body
    finally:
        ro.close()
    section = body.split("<h2>Embeddings</h2>", 1)[1].split("<h2>", 1)[0]
    assert '<progress value="1" max="4">' in section
    assert "1/4 live nodes (25%) with minilm-test; 3 to go at 5.0 nodes/s" in section, section
