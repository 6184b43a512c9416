"""One project's memtree: identity, paths, settings, plugin set and (lazily) the store.

Everything that serves a project — the daemon, the CLI, ``memtree walk`` — starts from :meth:`App.open`.
What plugins are handed at run time is not the App but its :attr:`App.context`, a :class:`HostContext`: exactly
what :class:`~memtree_core.context.Context` declares (:func:`narrow`), and nothing else.
"""

from __future__ import annotations

import logging
import os
import threading
from functools import cached_property
from pathlib import Path
from types import MappingProxyType
from typing import Any

from memtree_core.context import Context, PluginsView
from memtree_core.daemon import redaction_gate
from memtree_core.daemon.project import Identity, identify, write_json
from memtree_core.daemon.redacting import Redacted
from memtree_core.forwarder import records
from memtree_core.forwarder.paths import ProjectPaths, memtree_home
from memtree_core.plugins import MissingTokenCounter, PluginSet, short_error
from memtree_core.project_settings import load as load_project_settings
from memtree_core.settings import LoadedSettings, Settings
from memtree_core.store import StoreDamaged
from memtree_core.store.backends import HostStore, open_store
from memtree_core.types import Chunk, Chunker, members, tiles

log = logging.getLogger("memtree.app")


class App:
    def __init__(self, identity: Identity, paths: ProjectPaths, loaded: LoadedSettings, plugins: PluginSet,
                 environ: dict[str, str]) -> None:
        self.identity = identity
        self.paths = paths
        self.loaded = loaded
        self.plugins = plugins
        self.environ = environ
        self._store: HostStore | None = None
        self._store_lock = threading.Lock()
        self.damaged: str | None = None  # why the store is refused (see ``store``)
        # Shared scratch space for plugins that keep per-daemon state (e.g. walker clocks).
        self.state: dict[str, Any] = {}
        self._ingester: Any = None  # the capture path plugins reach through ingest_once
        view = HostPlugins(plugins, registries=MappingProxyType(plugins.registries))
        self.context = HostContext(self, plugins=view)  # what plugins are handed
        self._note_earlier_item_failures()
        self._configure_items()

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
    def store(self) -> HostStore:
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
                    counter = self.plugins.token_counter
                    try:
                        self._store = open_store(self.settings, self.environ, self.identity.store_key, self.paths.store,
                                                 self.plugins.store_backends.ranked(), self.plugins.store_migrations,
                                                 None if isinstance(counter, MissingTokenCounter) else counter)
                    except StoreDamaged as exc:
                        self.damaged = str(exc)
                        raise
        return self._store

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
        """Plugin ``name``'s own settings (:func:`memtree_core.plugin_settings.apply`), or None when it declares
        none or is not loaded."""
        return self.plugins.plugin_settings.get(name)

    def count_tokens(self, text: str) -> int:
        return self.plugins.token_counter.count(text)

    def chunker_for(self, path: str) -> Chunker:
        # The first match in precedence order (Registry.ranked): priority, then pluggy's call order.
        best = next((c for c in self.plugins.chunkers.ranked() if c.matches(path)), None)
        if best is None:
            raise LookupError(f"no chunker matches {path}; is the 'chunkers' plugin disabled?")
        return best

    def chunk(self, path: str, text: str) -> tuple[list[Chunk], str, list[str]]:
        """``text`` (the file at ``path``) chunked by the first matching chunker that keeps the
        :class:`~memtree_core.types.Chunker` contract: its chunks, its name, and a note for each chunker that
        broke the contract on the way (raised, or chunks that do not tile the file; each is reported failed,
        with the reason, and is not used again).  Raises ``LookupError`` when no chunker is left."""
        notes: list[str] = []
        while True:
            chunker = self.chunker_for(path)
            try:
                chunks = chunker.chunk(path, text)
                why = tiles(chunks, text)
            except Exception as exc:
                why = f"chunk() raised {short_error(exc)}"
            if why is None:
                return chunks, chunker.name, notes
            self.item_failed("chunkers", chunker.name, f"broke the chunker contract on {path}: {why}")
            notes.append(f"chunker {chunker.name!r} failed ({why}); it is not used again")

    # -- items that break their contract --------------------------------------------------------------
    def item_failed(self, kind: str, name: str, error: str) -> None:
        """Take item ``name`` of registry ``kind`` out of use and report it failed, with ``error``, on its
        plugin's line of ``memtree plugins`` and ``memtree info``: in this process, and (until its plugin
        changes version) in the others, which read it from the project's ``item-failures.json``."""
        failure = self.plugins.item_failed(kind, name, error)
        if failure is None:
            return
        log.error("plugin %s: %s %r failed and is no longer used: %s", failure["plugin"], kind, name, error)
        path = self.paths.dir / ITEM_FAILURES
        try:
            self.paths.ensure(sockets=False)
            earlier = _read_item_failures(path)
            earlier = [f for f in earlier if (f.get("plugin"), f.get("kind"), f.get("name"))
                       != (failure["plugin"], kind, name)]
            failure["source"] = _version_of(failure["source"])
            write_json(str(path), [*earlier, failure][-MAX_ITEM_FAILURES:])
        except (OSError, ValueError):
            log.exception("could not record the failure in %s", path)

    def _note_earlier_item_failures(self) -> None:
        """Report what other processes saw fail (the daemon's chunkers, say) on the plugins' lines, when their
        plugin is still the same version; they stay in use here until they fail here too."""
        path = self.paths.dir / ITEM_FAILURES
        if not path.exists():
            return
        for f in _read_item_failures(path):
            info = self.plugins.info(str(f.get("plugin")))
            if info is None or _version_of(info.source) != f.get("source") or info.status != "loaded":
                continue
            if any((i["kind"], i["name"]) == (f.get("kind"), f.get("name")) for i in info.failed_items):
                continue
            info.failed_items.append({k: str(f[k]) for k in ("kind", "name", "error", "seen") if k in f})

    def _configure_items(self) -> None:
        """Give every item with a ``configure`` (:class:`~memtree_core.types.Configurable`) its plugin's
        settings, once per plugin set; one that raises is reported failed and is not used."""
        if self.plugins.configured:
            return
        self.plugins.configured = True
        for kind, registry in self.plugins.registries.items():
            for entry in registry.entries():
                configure = getattr(entry.item, "configure", None)
                if not callable(configure):
                    continue
                try:
                    configure(self.plugin_settings(entry.plugin), self.context)
                except Exception as exc:
                    self.plugins.item_failed(kind, entry.name, f"configure() raised {short_error(exc)}")

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
        """Count values redacted from what memtree stored or returned, per rule, for ``memtree stats``: every
        path that redacts (captures, the read, grep and bash tools) records here."""
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
                reason = policy.check(command, self.context)
            except Exception:
                log.exception("command policy %s failed; the command's output is not stored", policy.name)
                return f"policy-failed:{policy.name}"
            if reason:
                return str(reason)
        return None

    def ingest_once(self, payload: dict[str, Any], replayed: bool = False) -> tuple[list[str], bool]:
        """One hook payload through the capture path (:class:`~memtree_core.daemon.ingest.IngestServer`)."""
        if self._ingester is None:
            from memtree_core.daemon.ingest import IngestServer

            self._ingester = IngestServer(self)
        return self._ingester.ingest_once(payload, replayed)  # type: ignore[no-any-return]

    @cached_property
    def project_root(self) -> Path:
        return self.identity.root


ITEM_FAILURES = "item-failures.json"  # in the project's directory: items seen breaking their contract
MAX_ITEM_FAILURES = 100


def _version_of(source: str) -> str:
    """A plugin's source with its version: a third-party one's names it; a built-in's is memtree's."""
    if source.startswith("builtin:"):
        from memtree_core import __version__

        return f"{source} (memtree {__version__})"
    return source


def _read_item_failures(path: Path) -> list[dict[str, Any]]:
    import json

    try:
        raw = records.read(str(path), 1 << 20)  # ValueError: a file not to be trusted (a link, not 0600)
        value = json.loads(raw) if raw else []
    except ValueError:
        return []
    return [f for f in value if isinstance(f, dict)] if isinstance(value, list) else []


def narrow(protocol: type, name: str) -> type:
    """A class ``name`` whose instances, ``cls(host, **fixed)``, have exactly the members ``protocol`` declares,
    each read off ``host`` when asked (as it is: its store, its bound methods) or given in ``fixed``; nothing
    else, and none can be set."""

    def member(m: str) -> property:
        return property(lambda self: self._fixed[m] if m in self._fixed else getattr(self._host, m))

    def __init__(self: Any, host: object, **fixed: Any) -> None:
        self._host, self._fixed = host, fixed

    return type(name, (), {"__slots__": ("_host", "_fixed"), "__init__": __init__,
                           "__repr__": lambda self: f"<{name} of {self._host!r}>",
                           **{m: member(m) for m in members(protocol)}})


# What plugins are handed: the App as Context declares it, the plugin set as PluginsView does (its registries
# read-only, never the pluggy manager).  One per App (App.context).
HostPlugins = narrow(PluginsView, "HostPlugins")
HostContext = narrow(Context, "HostContext")
