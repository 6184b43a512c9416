"""The ``repo_indexer`` walker: keep the project indexed from the daemon, when the user turns it on.

With ``index.background`` (user-only, off by default) the daemon runs ``memtree index``'s incremental pass
over the project root every ``index.intervalMs``: files with a live version of the same mtime and size are
passed over after one ``lstat``; new files and files the ``staleness_marker`` found changed (their nodes went
stale, so no live version matches) are re-chunked through ``read``'s path.  At most ``index.maxFilesPerRun``
files are written per run, so one tick stays short on a large repository; the next run goes on from there.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memtree_core.context import Context


class RepoIndexer:
    """The walker, and what ``memtree index`` runs (the command finds it by name in the plugin set, so
    indexing goes wherever a plugin replaces it)."""

    name = "repo_indexer"
    trigger = "interval"

    @property
    def default_max_bytes(self) -> int:
        from memtree_plugins.walkers.repo_files import DEFAULT_MAX_BYTES

        return DEFAULT_MAX_BYTES

    def index(self, app: Context, root: Path, max_bytes: int, **progress: Any) -> Any:
        """One incremental pass over ``root`` (``on_file``/``on_total`` callbacks), the summary back."""
        from memtree_plugins.walkers.repo_index import index_directory

        return index_directory(app, root, max_bytes, **progress)

    def interval_s(self, app: Context) -> float:
        return app.plugin_settings("walkers").index.interval_ms / 1000

    def has_work(self, app: Context) -> bool:
        return app.plugin_settings("walkers").index.background

    def run(self, app: Context) -> dict[str, int]:
        from memtree_plugins.walkers.repo_index import index_directory

        if not app.plugin_settings("walkers").index.background:
            return {}
        opts = app.plugin_settings("walkers").index
        summary = index_directory(app, app.project_root, opts.max_bytes, max_writes=opts.max_files_per_run)
        counters = {"files_indexed": summary.indexed, "files_unchanged": summary.unchanged,
                    "files_skipped": sum(summary.skipped.values()), "chunks_written": summary.chunks}
        if summary.complete:
            counters["passes_completed"] = 1
        return {k: v for k, v in counters.items() if v}
