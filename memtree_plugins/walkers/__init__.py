"""The built-in walkers that keep the store tidy without a model
(``docs/architecture.md#data-flow-of-a-capture``, step 7):

* ``filter`` (event: pending nodes) — triage captures: drop with a reason or promote to ``live``;
* ``staleness_marker`` (interval ``walkers.stalenessIntervalMs``) — one stat per source file, ``stale``
  when the file changed or is gone;
* ``pruner`` (interval ``walkers.prunerIntervalMs``) — retention horizons, audit horizon, size cap, space
  reclaim;
* ``repo_indexer`` (interval ``index.intervalMs``, only with the user's ``index.background``) — keep the
  project indexed as ``memtree index`` does, re-chunking the files the staleness marker found changed;
* ``backfill`` (event: a missed-captures log waits) — store the tool results the capture hook could not
  deliver, from the session transcripts (:mod:`.backfill`; the ``memtree import`` command, :mod:`.import_`,
  shares its path).

The model-backed walkers (embedding_indexer, dedupe, summarizer) live in ``memtree_plugins.semantic``.
Every status change goes through ``Store.transition``; every run does bounded work.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memtree_core.hookspecs import hookimpl

if TYPE_CHECKING:
    from memtree_core.command import Command
    from memtree_core.plugin_settings import BuiltinSettings
    from memtree_core.registry import Register
    from memtree_core.types import Walker


@hookimpl(trylast=True)
def memtree_settings_model() -> type[BuiltinSettings]:
    # ``retention``, ``index`` and the walkers' keys of ``walkers``: memtree_plugins.walkers.settings
    from memtree_plugins.walkers.settings import WalkersSettings

    return WalkersSettings


@hookimpl(trylast=True)
def memtree_register_walkers(register: Register[Walker]) -> None:
    # imported here, not at the top: `memtree import --help` imports this package and must stay light
    from memtree_plugins.walkers.backfill import BackfillWalker
    from memtree_plugins.walkers.filter import FilterWalker
    from memtree_plugins.walkers.indexer import RepoIndexer
    from memtree_plugins.walkers.pruner import Pruner
    from memtree_plugins.walkers.staleness import StalenessMarker

    register(FilterWalker())
    register(StalenessMarker())
    register(Pruner())
    register(RepoIndexer())
    register(BackfillWalker())


@hookimpl(trylast=True)
def memtree_register_commands(register: Register[Command]) -> None:
    from memtree_core.command import Command

    # ``memtree import`` stores past sessions' results through the backfill walker's path (:mod:`.import_`).
    register(Command("import", "bring past Claude Code sessions' Read/Grep/Bash results into the store",
                     "memtree_plugins.walkers.import_"))
