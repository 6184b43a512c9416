"""One project's memtree: identity, paths, settings, plugin set and (lazily) the store.

Everything that serves a project — the daemon, the CLI, ``memtree walk`` — starts from :meth:`App.open`.
"""

from __future__ import annotations

import logging
import os
import threading
from functools import cached_property
from pathlib import Path
from typing import Any

from memtree_core.daemon import redaction_gate
from memtree_core.daemon.project import Identity, identify
from memtree_core.daemon.redacting import Redacted
from memtree_core.forwarder.paths import ProjectPaths, memtree_home
from memtree_core.plugins import MissingTokenCounter, PluginSet
from memtree_core.project_settings import load as load_project_settings
from memtree_core.settings import LoadedSettings, Settings
from memtree_core.store import Store, StoreDamaged
from memtree_core.types import Chunker

log = logging.getLogger("memtree.app")


class App:
    def __init__(self, identity: Identity, paths: ProjectPaths, loaded: LoadedSettings, plugins: PluginSet,
                 environ: dict[str, str]) -> None:
        self.identity = identity
        self.paths = paths
        self.loaded = loaded
        self.plugins = plugins
        self.environ = environ
        self._store: Store | None = None
        self._store_lock = threading.Lock()
        self.damaged: str | None = None  # why the store is refused (see ``store``)
        # Shared scratch space for plugins that keep per-daemon state (e.g. walker clocks).
        self.state: dict[str, Any] = {}

    @classmethod
    def open(cls, workspace: Path | str | None = None, environ: dict[str, str] | None = None,
             **build_kwargs: Any) -> App:
        env = dict(os.environ) if environ is None else environ
        identity = identify(workspace or os.getcwd())
        home = memtree_home(env)
        paths = ProjectPaths.for_hash(home, identity.hash)
        # a bad value in the user's own layers raises SettingsError
        loaded, plugins = load_project_settings(home, identity.root, env, **build_kwargs)
        return cls(identity, paths, loaded, plugins, env)

    @property
    def settings(self) -> Settings:
        return self.loaded.settings

    @property
    def store(self) -> Store:
        """The store, opened (with a bounded integrity check) on first use; raises ``StoreDamaged`` for as
        long as this process knows the file is damaged, so nothing more is written to it."""
        if self.damaged is not None:
            raise StoreDamaged(self.damaged)
        if self._store is None:
            with self._store_lock:
                if self.damaged is not None:
                    raise StoreDamaged(self.damaged)
                if self._store is None:
                    self.paths.ensure(sockets=False)
                    try:
                        store = Store.open(self.paths.store, max_bytes=self.settings.capture.max_bytes,
                                           synchronous=self.settings.store.synchronous)
                    except StoreDamaged as exc:
                        self.damaged = str(exc)
                        raise
                    counter = self.plugins.token_counter
                    if counter is not None and not isinstance(counter, MissingTokenCounter):
                        try:  # each node's count is stored as it is written (an optimisation only)
                            store.count_tokens_with(counter)
                        except Exception:
                            log.exception("token counts will not be stored with new nodes")
                    self._migrate_plugins(store)
                    self._store = store
        return self._store

    def _migrate_plugins(self, store: Store) -> None:
        """Each plugin's own schema steps (hook ``memtree_store_migrations``) this store has not had yet; one
        that fails is logged and tried again at the next open, and the store serves the others meanwhile."""
        for entry in self.plugins.store_migrations.entries():
            try:
                store.migrate(entry.item.name, entry.item.steps)
            except Exception:
                log.exception("plugin %s: its schema steps %r failed; tried again at the next open",
                              entry.plugin, entry.item.name)

    def mark_damaged(self, exc: BaseException) -> str:
        """SQLite reported corruption while in use: refuse the store from now on; return the message."""
        from memtree_core.store.store import damaged_message

        self.damaged = damaged_message(self.paths.store, str(exc))
        return self.damaged

    def close(self) -> None:
        if self._store is not None:
            self._store.close()
            self._store = None

    # -- plugin conveniences -------------------------------------------------------------------------
    def plugin_settings(self, name: str) -> Any:
        """Plugin ``name``'s own settings (its ``memtree_settings_model``, with every layer applied), or None
        when it declares none or is not loaded: a third-party plugin's ``plugins.config.<name>`` values, a
        built-in's top-level keys (with its ``plugins.config`` values as ``config``)."""
        return self.plugins.plugin_settings.get(name)

    def count_tokens(self, text: str) -> int:
        return self.plugins.token_counter.count(text)

    def chunker_for(self, path: str) -> Chunker:
        # The first match in precedence order (Registry.ranked): priority, then pluggy's call order.
        best = next((c for c in self.plugins.chunkers.ranked() if c.matches(path)), None)
        if best is None:
            raise LookupError(f"no chunker matches {path}; is the 'chunkers' plugin disabled?")
        return best

    def redact(self, text: str) -> tuple[str, dict[str, int]]:
        """Apply every redaction rule in order; return the clean text and hits per rule (never values).

        Raises :class:`~memtree_core.daemon.redaction_gate.RedactionUnavailable` when no rules are in effect or one
        fails: the caller must then store nothing (redaction fails closed)."""
        done = self.redact_lines(text)
        return done.text, done.hits

    def redact_lines(self, text: str) -> Redacted:
        """:meth:`redact` keeping the line count, with which line lost which value to which rule."""
        return redaction_gate.redact(self.settings, self.plugins, text)

    @property
    def redaction_unavailable(self) -> str | None:
        """Why nothing can be stored for want of redaction, or None."""
        return redaction_gate.unavailable_reason(self.settings, self.plugins)

    def record_redactions(self, hits: dict[str, int]) -> None:
        """Count values redacted from what memtree stored or returned, per rule, for ``memtree stats``.

        Every path that redacts (the ingest socket and the read, grep and bash tools) records here, so the
        counters do not depend on how an output came in.
        """
        if not hits:
            return  # no write lock for the common case
        with self.store.tx():
            for rule, n in hits.items():
                self.store.bump(f"redaction:{rule}", n)

    def command_denied(self, command: str) -> str | None:
        """Why ``command``'s output must never be stored (the first command policy's reason), or None.

        A policy that raises denies: a lost capture costs less than a stored environment dump."""
        for policy in self.plugins.command_policies:
            try:
                reason = policy.check(command, self)
            except Exception:
                log.exception("command policy %s failed; the command's output is not stored", policy.name)
                return f"policy-failed:{policy.name}"
            if reason:
                return str(reason)
        return None

    @cached_property
    def project_root(self) -> Path:
        return self.identity.root
