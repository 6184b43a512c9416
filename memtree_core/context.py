"""What a plugin gets of the host: :class:`Context`; of the store: :class:`StoreAccess`; of the plugin set:
:class:`PluginsView`.

Every hook and registered item receives the host as ``app``; these protocols are all a plugin may use of it.  At
run time it is a :class:`~memtree_core.app.HostContext` with exactly what :class:`Context` lists, never the App
(``tests/core/test_plugin_context.py``); ``app.plugins`` gives registries, the token counter and the load report,
never the pluggy manager.  The store is reached through :class:`StoreAccess` only: a plugin owns its queries.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from memtree_core.daemon.project import Identity
    from memtree_core.daemon.redacting import Redacted
    from memtree_core.forwarder.paths import ProjectPaths
    from memtree_core.plugins import PluginInfo
    from memtree_core.registry import Registry
    from memtree_core.settings import LoadedSettings, Settings
    from memtree_core.store import NodeRow, VectorStatus
    from memtree_core.store.upkeep import Space
    from memtree_core.types import (
        CaptureAdapter,
        Chunk,
        Chunker,
        Embedder,
        Filter,
        OutputReplacer,
        Ranker,
        Retriever,
        Selector,
        Summarizer,
        TokenCounter,
        ToolSpec,
        Walker,
    )


@runtime_checkable
class StoreAccess(Protocol):
    """The store as plugins use it (:class:`~memtree_core.store.Store`; SQL in memtree_core/store/)."""

    path: Path
    max_bytes: int  # content is capped at this many UTF-8 bytes
    vector: VectorStatus  # whether sqlite-vec loaded, and why not
    dialect: str  # the SQL it speaks: "sqlite" or "postgresql" (docs/postgresql.md)
    machine: str  # this machine's id on a store machines share (store/machine.py); "" on a local store
    # Held across several reads for one consistent view (re-entrant; hold it briefly: tools and walkers share
    # the store).  Writes take it themselves, through tx().
    lock: AbstractContextManager[object]

    def tx(self) -> AbstractContextManager[object]:
        """One write transaction around several calls below (nested calls join it)."""
        ...

    # -- SQL of the plugin's own (a plugin owns its queries) ------------------------------------------
    def query(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> list[tuple[Any, ...]]: ...
    def query_one(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> tuple[Any, ...] | None: ...
    def execute(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> int: ...

    # -- nodes, edges, statuses (store.py) ------------------------------------------------------------
    def insert_node(self, kind: str, content: str, *, parent_id: str | None = None, source_uri: str | None = None,
                    status_: str = "pending", mtime: int = 0, metadata: dict[str, Any] | None = None,
                    node_id: str | None = None, created_at: int | None = None) -> NodeRow: ...
    def get_node(self, node_id: str) -> NodeRow | None: ...
    def get_nodes(self, node_ids: Iterable[str]) -> dict[str, NodeRow]: ...
    def update_metadata(self, node_id: str, changes: dict[str, Any]) -> None: ...
    def add_edge(self, src_id: str, dst_id: str, kind: str) -> None: ...
    def transition(self, node_ids: Iterable[str], to: str, reason: str = "") -> int: ...
    def bump(self, name: str, n: int = 1) -> None: ...
    def counters(self, prefix: str = "") -> dict[str, int]: ...
    def set_meta(self, key: str, value: str | None) -> None: ...  # None deletes the key
    def get_meta(self, key: str) -> str | None: ...
    def stats(self) -> dict[str, Any]: ...

    # -- vectors (vectors.py): a node's embedding under (model, dim); ``where`` is a condition over ``nodes n``
    def vector_upsert(self, rows: Sequence[tuple[str, Sequence[float]]], model: str, dim: int) -> int: ...
    def vector_delete(self, node_ids: Sequence[str] | None, *, limit: int | None = 2000) -> int: ...
    def vector_search(self, vector: Sequence[float], model: str, dim: int, k: int, *,
                      where: tuple[str, Sequence[Any]] | None = None, selective: bool = False,
                      exact: bool = False) -> list[tuple[str, float]]: ...

    # -- upkeep (upkeep.py) ---------------------------------------------------------------------------
    def maintain(self, *, merge_index_pages: int = 0, reclaim_pages: int = 0) -> Space:
        """One bounded step of space upkeep (keyword-index merge, free pages back to the file system),
        then what the store takes (``used_bytes``, ``disk_bytes``, ...); with no arguments only that."""
        ...

    # -- keyword search (keywords.py: ``query`` is a memtree_core.store.keywords.Keywords, ``where`` a
    # memtree_core.store.node_filter.NodeFilter; the index's own syntax stays in the store) -------------
    def keyword_search(self, query: Any, *, limit: int | None = None, offset: int = 0, order: str = "rank",
                       rowids: Sequence[int] | None = None,
                       rowid_range: tuple[int | None, int | None] | None = None,
                       where: Any = None) -> list[tuple[int, float]]: ...
    def keyword_count(self, query: Any, cap: int | None = None) -> int: ...
    def keyword_snippets(self, query: Any, *, rowids: Sequence[int] | None = None,
                         texts: Mapping[int, str] | None = None, marks: tuple[str, str] = ("«", "»"),
                         ellipsis: str = "…", tokens: int = 16) -> dict[int, str]: ...


@runtime_checkable
class PluginsView(Protocol):
    """The plugin set as plugins read it (:class:`~memtree_core.plugins.PluginSet`, read-only): the registries
    by kind, each item with the plugin that registered it, in precedence order (``ranked()``); the token
    counter every budget uses; and what loaded, for the commands that report it."""

    # read-only, like every member here (the host's view has no setters)
    chunkers: Registry[Chunker]
    filters: Registry[Filter]
    walkers: Registry[Walker]
    tools: Registry[ToolSpec]
    embedders: Registry[Embedder]
    summarizers: Registry[Summarizer]
    rankers: Registry[Ranker]
    selectors: Registry[Selector]
    retrievers: Registry[Retriever]
    capture_adapters: Registry[CaptureAdapter]
    output_replacers: Registry[OutputReplacer]
    token_counter: TokenCounter

    # -- what loaded (`memtree info` reports it) --------------------------------------------------------
    @property
    def report(self) -> Sequence[PluginInfo]:
        """Every plugin considered, with its status (loaded, disabled, failed, ...) and what it provides."""
        ...

    @property
    def failures(self) -> Sequence[PluginInfo]:
        """The plugins that failed to load or are missing, and those with an item that failed (its
        ``failed_items``: one that broke its kind's protocol, or whose ``configure`` raised)."""
        ...

    @property
    def registries(self) -> Mapping[str, Registry[Any]]:
        """Every registry by kind (redaction rules, command policies and commands too), to count them."""
        ...


@runtime_checkable
class Context(Protocol):
    """The host as a plugin sees it: this project's identity, paths, settings and plugin set, its store, and
    the host services plugins share (token counting, chunker choice, redaction, command policy)."""

    identity: Identity  # the project: its root and hash
    paths: ProjectPaths  # the files memtree keeps for it (store, sockets, ...)
    environ: dict[str, str]  # the environment the host was started with (not os.environ: tests pass their own)
    loaded: LoadedSettings  # the settings with where each value came from, for commands that explain them
    # Scratch space shared by plugins for per-process state that must outlive one call but not the process:
    # a memo of recent reads, the search mode last chosen, an embedder probe.  Keys are namespaced by the
    # plugin that owns them ("wrappers.read.memo"); nothing in it is persisted.
    state: dict[str, Any]

    @property
    def settings(self) -> Settings: ...

    @property
    def plugins(self) -> PluginsView:
        """Every registry (walkers, filters, embedders, ...), read-only."""
        ...

    @property
    def store(self) -> StoreAccess: ...

    @property
    def project_root(self) -> Path: ...

    @property
    def redaction_unavailable(self) -> str | None:
        """Why nothing can be stored for want of redaction, or None."""
        ...

    def plugin_settings(self, name: str) -> Any:
        """Plugin ``name``'s own settings (its ``memtree_settings_model`` with every layer applied), or None."""
        ...

    def count_tokens(self, text: str) -> int: ...

    def chunker_for(self, path: str) -> Chunker: ...

    def chunk(self, path: str, text: str) -> tuple[list[Chunk], str, list[str]]:
        """``text`` chunked by the first matching chunker that keeps the :class:`~memtree_core.types.Chunker`
        contract (its chunks tile the file): the chunks, that chunker's name, and a note for each one that
        broke it on the way (reported failed in ``memtree plugins``, and not used again)."""
        ...

    def redact(self, text: str) -> tuple[str, dict[str, int]]: ...

    def redact_lines(self, text: str) -> Redacted: ...

    def record_redactions(self, hits: dict[str, int]) -> None: ...

    def command_denied(self, command: str) -> str | None: ...

    def ingest_once(self, payload: dict[str, Any], replayed: bool = False) -> tuple[list[str], bool]:
        """Store one Claude Code ``PostToolUse`` payload through the host's capture path, exactly as a hook
        capture (command policies, capture adapters, redaction, the store's cut), once per tool call: the ids of
        its nodes and whether the store cut the content.  ``replayed``: rebuilt from a session transcript, not
        sent by a hook.  Raises :class:`~memtree_core.daemon.ingest.Refused` with the reason it was not stored."""
        ...
