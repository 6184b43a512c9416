"""memtree's hook specifications: every extension point a plugin can implement.

Register-style hooks receive a :class:`~memtree_core.registry.Register` bound to the calling plugin:
``register(item)`` adds an item, ``replaces=True`` overrides another plugin's item of the same name (without
it, a duplicate name is an error naming both plugins and the newcomer's item is skipped), and
``register.remove(name)`` withdraws one.  Built-in plugins (``memtree_plugins``) implement these hooks exactly
as a third-party plugin would, registered first with ``trylast=True``.

**Precedence, one rule for every kind**: pluggy's documented call order (``tryfirst``, then the most recently
registered, then ``trylast`` ones, the built-ins, in registration order).  The register hooks run in the
reverse of it, so the plugin with the highest precedence registers last and its ``replaces=True`` and
``register.remove`` see everything.  A registry gives its items by ``priority`` (0 when an item has none),
then precedence, then the order one plugin registered them (:meth:`~memtree_core.registry.Registry.ranked`):
where one item is picked (a chunker, a selector, an embedder for ``"auto"``...), the first that applies;
where every item runs (redaction rules, filters, command policies, walkers), in that order.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pluggy

if TYPE_CHECKING:
    from typing import Any

    from memtree_core.command import Command
    from memtree_core.context import Context
    from memtree_core.plugin_settings import PluginSettings
    from memtree_core.registry import Register
    from memtree_core.settings import Settings
    from memtree_core.types import (
        CaptureAdapter,
        Chunker,
        CommandPolicy,
        Embedder,
        Filter,
        OutputReplacer,
        PreparedCapture,
        Ranker,
        RedactionRule,
        Retriever,
        Selector,
        Summarizer,
        TokenCounter,
        ToolSpec,
        Walker,
    )

hookspec = pluggy.HookspecMarker("memtree")
hookimpl = pluggy.HookimplMarker("memtree")


@hookspec
def memtree_register_chunkers(register: Register[Chunker]) -> None:
    """Register chunkers that split files into ``file_chunk`` nodes.

    :param register: call with a :class:`~memtree_core.types.Chunker`.  For a file, the first chunker in
        precedence order (highest ``priority``, then pluggy's call order) whose ``matches(path)`` is true.
    """


@hookspec
def memtree_register_filters(register: Register[Filter]) -> None:
    """Register filters the ``filter`` walker applies to pending captures.

    :param register: call with a :class:`~memtree_core.types.Filter`.  The first filter that returns a
        reason drops the capture (recorded in the transition log and in ``memtree stats``).
    """


@hookspec
def memtree_register_redaction_rules(register: Register[RedactionRule]) -> None:
    """Register redaction rules applied to every capture and tool output before anything is stored.

    :param register: call with a :class:`~memtree_core.types.RedactionRule`.  Rules run in registration
        order; each replaces what it finds with ``[REDACTED:<tag>]``.  Redaction fails closed: a rule that
        raises keeps that text from being stored, and with no rules at all nothing is stored.  A hook that
        raises is undone whole (what it removed or replaced comes back).
    """


@hookspec
def memtree_register_walkers(register: Register[Walker]) -> None:
    """Register background walkers run by the daemon's coordinator and by ``memtree walk``.

    :param register: call with a :class:`~memtree_core.types.Walker`.
    """


@hookspec
def memtree_register_tools(register: Register[ToolSpec]) -> None:
    """Register MCP tools served by the daemon.

    :param register: call with a :class:`~memtree_core.types.ToolSpec`; ``register.remove(name)``
        disables a tool another plugin registered.
    """


@hookspec
def memtree_register_embedders(register: Register[Embedder]) -> None:
    """Register embedders; ``embeddingModel`` picks one by ``name`` or ``model``, ``"auto"`` by precedence.

    :param register: call with a :class:`~memtree_core.types.Embedder`.
    """


@hookspec
def memtree_register_summarizers(register: Register[Summarizer]) -> None:
    """Register summarizers used by the ``summarizer`` walker (the first available in precedence order).

    :param register: call with a :class:`~memtree_core.types.Summarizer`.
    """


@hookspec
def memtree_register_rankers(register: Register[Ranker]) -> None:
    """Register rankers that fuse keyword and semantic results for hybrid search.

    :param register: call with a :class:`~memtree_core.types.Ranker`.
    """


@hookspec
def memtree_register_selectors(register: Register[Selector]) -> None:
    """Register selectors that choose which lines of a long output to keep when it is cut to a budget.

    :param register: call with a :class:`~memtree_core.types.Selector`.  For an output, the first
        selector in precedence order (highest ``priority``, then pluggy's call order) that matches.
    """


@hookspec(firstresult=True)
def memtree_token_counter(settings: Settings) -> TokenCounter | None:
    """Return the token counter used for every budget and every manifest figure.

    Stops at first non-None result.  The built-in estimator is ``trylast`` so any plugin wins.  When no
    plugin returns one (the ``tokens`` plugin disabled), ``memtree plugins`` reports a missing token counter
    (fatal under ``MEMTREE_STRICT_PLUGINS=1``) and every count raises that error.

    :param settings: the project's settings.
    :return: a :class:`~memtree_core.types.TokenCounter`, or None to defer to the next plugin.
    """


# -- the command line ----------------------------------------------------------------------------------
@hookspec
def memtree_register_commands(register: Register[Command]) -> None:
    """Register ``memtree`` subcommands (as llm's ``register_commands`` does).

    :param register: call with a :class:`~memtree_core.command.Command`: its name, one-line help, and a
        handler (a module path, imported only when the command runs, or an object) with
        ``add_arguments(parser)`` and ``run(args) -> int``.  The plugins are those the user's own choices
        select (``MEMTREE_LOAD_PLUGINS``/``MEMTREE_DISABLE_PLUGINS`` and their config file); ``serve``,
        ``daemon``, ``stop``, ``doctor`` and ``plugins`` are the host's own and cannot be replaced.
    """


# -- per-plugin settings -------------------------------------------------------------------------------
@hookspec
def memtree_settings_model(name: str) -> type[PluginSettings] | None:
    """Declare this plugin's own settings (as tox's ``tox_add_core_config`` and datasette's ``plugin_config``).

    Values live under ``plugins.config.<plugin name>`` and come from the same layers as every setting:
    defaults < ``$MEMTREE_HOME/config.json`` < the repository's ``.memtree.json`` < the environment
    (``MEMTREE_PLUGINS__CONFIG__<NAME>__<KEY>``).  A repository may set only the fields marked
    :data:`~memtree_core.plugin_settings.REPO_SAFE`; its other or out-of-bound values are dropped with a
    warning.  The effective values are ``app.plugin_settings(name)`` and show in ``memtree plugins --json``.
    A built-in plugin returns a :class:`~memtree_core.plugin_settings.BuiltinSettings` instead: its fields
    are the top-level keys of config.json it owns (``retention``, ``search`` ...).

    :param name: the name this plugin is loaded under: its key, ``plugins.config.<name>`` (an implementation
        may leave the argument out).
    :return: a subclass of :class:`~memtree_core.plugin_settings.PluginSettings` whose fields all have
        defaults (camelCase keys, unknown keys refused, strict booleans), or None.
    """


# -- the search and ingest seams: retrievers, capture adapters, output replacers, command policies ------------
@hookspec
def memtree_register_retrievers(register: Register[Retriever]) -> None:
    """Register retrievers the ``search`` tool can use: each is a search mode of its own name, and one with
    ``fuse = True`` joins ``hybrid`` search (fused with ``keyword`` by the ``search.ranker`` ranker).

    :param register: call with a :class:`~memtree_core.types.Retriever`.  Built-ins: ``keyword`` (FTS5
        bm25) and ``semantic`` (embeddings).  ``mode='auto'`` is ``hybrid`` when a fusing retriever says it
        is ``available``, else ``keyword`` with that retriever's reason.
    """


@hookspec
def memtree_register_command_policies(register: Register[CommandPolicy]) -> None:
    """Register command policies: which Bash commands' output is never stored (captures and the ``bash`` tool).

    :param register: call with a :class:`~memtree_core.types.CommandPolicy`.  Every policy runs, in
        registration order, and the first reason drops the whole capture.  Built-ins (in the ``redaction``
        plugin, which a repository cannot disable): ``env-dump`` and ``bash.deny``.  Like redaction rules, a
        plugin the repository left out still registers its command policies.
    """


@hookspec
def memtree_register_capture_adapters(register: Register[CaptureAdapter]) -> None:
    """Register capture adapters that turn a Claude Code hook payload into the captures to store, per tool.

    :param register: call with a :class:`~memtree_core.types.CaptureAdapter`.  A payload goes to the first
        adapter in precedence order whose ``tools`` lists its ``tool_name`` (the built-ins, in the
        ``capture`` plugin: ``read``, ``grep``, ``bash``); with none it is dropped as ``unknown-tool``.
        What an adapter returns is then checked by the command policies, redacted and stored like any
        capture.  The capture hook runs only for the tools its ``matcher`` in ``plugin/hooks/hooks.json``
        names.
    """


@hookspec(firstresult=True)
def memtree_prepare_capture(app: Context, payload: dict[str, Any]) -> PreparedCapture | None:
    """Turn one hook payload into the redacted captures that ``memtree_store_capture`` stores.

    Stops at first non-None result.  The built-in pipeline (``capture`` plugin, ``trylast``) applies
    ``capture.bash`` and the command policies, asks the capture adapters, cuts content far over
    ``capture.maxBytes``, and redacts each capture (in its file's context where it can) through
    ``app.redact``.  The host asks only while redaction can run (it fails closed before), then hands the
    result to ``memtree_store_capture``; with no answer the payload is dropped as ``unknown-tool``.  Raise :class:`~memtree_core.daemon.ingest.Refused` with a short reason to drop it (counted
    ``capture:dropped:<reason>``); any other exception drops it too.

    :param app: the project (settings, the registries in ``app.plugins``, ``redact``, ``command_denied``).
    :param payload: the Claude Code hook payload, a JSON object (``tool_name``, ``tool_input``...).
    :return: a :class:`~memtree_core.types.PreparedCapture`, or None to defer to the next plugin.
    """


@hookspec(firstresult=True)
def memtree_store_capture(app: Context, payload: dict[str, Any], prepared: PreparedCapture,
                          replayed: bool) -> list[str] | None:
    """Store one payload's prepared captures as ``pending`` nodes and return the ids of the nodes holding it.

    Stops at first non-None result.  The host asks once ``memtree_prepare_capture`` answered (so redaction
    ran), and acks the capture with these ids: they must be committed when the hook returns.  The built-in
    (``capture`` plugin, ``trylast``) inserts the captures, counts their redactions and
    ``capture:accepted:<tool>`` in one write transaction, and there answers a call already stored by the
    other route (live from a hook, replayed from a transcript) with the ids that hold it.  An implementation
    may return None to defer (after recording the capture somewhere else, say); raise
    :class:`~memtree_core.daemon.ingest.Refused` to drop it.  With no answer the payload is dropped as ``not-stored``.

    :param app: the project (settings, store, ``record_redactions``).
    :param payload: the Claude Code hook payload as received (``tool_name``, ``tool_use_id``...).
    :param prepared: what ``memtree_prepare_capture`` returned: redacted captures and redaction hits.
    :param replayed: True when the payload was rebuilt from a session transcript (the ``backfill`` walker,
        ``memtree import``), not sent by a hook.
    :return: the node ids, or None to defer to the next plugin.
    """


@hookspec
def memtree_register_output_replacers(register: Register[OutputReplacer]) -> None:
    """Register output replacers that shrink what the model sees of a long tool output (``capture.replace``).

    :param register: call with a :class:`~memtree_core.types.OutputReplacer`.  After the whole output is
        stored, replacers are asked in precedence order (highest ``priority``, then pluggy's call order); the
        first :class:`~memtree_core.types.Replacement` with an ``output`` is the synchronous hook's answer.
        The built-in ``slice`` (``selectors`` plugin) cuts Bash and Grep output with the selectors.
    """


# -- the daemon's life: what a plugin sets up when it starts and ends when it stops ---------------------------
@hookspec
def memtree_daemon_started(app: Context) -> None:
    """The daemon has opened the project and is about to accept captures: set up what lives outside it.

    Called once per daemon start, on the ingest server's thread, after the project's root is registered for
    the hooks and before the first capture is read (slow work here delays captures, never the MCP tools).
    Every implementation runs, each in its own guard: one that raises is logged and the others still run.
    The built-in ``capture`` plugin writes ``$MEMTREE_HOME/hook-sender`` (which program the capture and
    replacement hooks run to reach the socket); ``selectors`` turns output replacement on (its setting
    ``capture.replace``: the flag the replacement hook reads) and warms its replacer up on a thread, and
    ``semantic`` loads the store's binary codes for nearest-neighbour search on another.

    :param app: the project the daemon serves (settings, paths, the registries in ``app.plugins``, store).
    """


@hookspec
def memtree_daemon_stopping(app: Context) -> None:
    """The daemon is stopping: end what a plugin started that must not outlive it.

    Called when the daemon stops (an idle timeout, a signal, ``memtree stop``), once as its sessions close,
    so tool calls in flight return at once, and again just before it exits, for any started meanwhile: an
    implementation must be safe to call twice.  Every implementation runs, each in its own guard.  The
    built-in ``wrappers`` plugin ends the process groups (and their escaped children) of the ``bash`` and
    ``grep`` tools, and refuses new commands from then on.

    :param app: the project the daemon serves.
    """


# -- the store: a plugin's own tables ----------------------------------------------------------------------
if TYPE_CHECKING:
    from memtree_core.store.backends import StoreBackend
    from memtree_core.store.migrations import Migrations


@hookspec
def memtree_store_migrations(register: Register[Migrations]) -> None:
    """Register this plugin's own schema steps: the tables and indexes it keeps in the project's store.

    :param register: call with a :class:`~memtree_core.store.migrations.Migrations`: a name (the owner; its
        progress is the ``meta`` key ``schema:<name>``) and its steps, oldest first, each a SQL statement or
        a function of the store (one that returns False has not applied yet and runs again at the next
        open).  Whenever the host opens a project's store it applies the steps that store has not had, in
        order, each once and in its own transaction, whatever other processes open it meanwhile; a step
        that fails is logged and it and the owner's later steps are tried again at the next open.  Never
        edit a released step, add the next.  Then query your tables through ``app.store.query`` and
        ``execute``.  The built-in ``semantic`` plugin indexes the vectors' models this way.
    """


@hookspec
def memtree_store_backends(register: Register[StoreBackend]) -> None:
    """Register store backends: where a project's store lives, by ``store.url``'s scheme.

    :param register: call with a :class:`~memtree_core.store.backends.StoreBackend` (name, URL schemes, and
        ``open(target)`` returning the store).  A plugin's backend comes before the built-ins for its scheme
        (``sqlite``: an empty URL); a URL no backend serves is an error naming those registered.
    """
