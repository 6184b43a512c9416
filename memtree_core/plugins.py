"""Plugin loading: one explicit :func:`build` call per project; nothing loads at import.

Order: built-ins (an explicit list under short names), then the entry-point group ``memtree``.  Selection,
strongest first: ``MEMTREE_DISABLE_PLUGINS=a,b`` and the repo's ``plugins.disable`` block plugins (built-ins
included) before they are imported; ``MEMTREE_LOAD_PLUGINS=a,b`` loads only those third-party plugins (entry-point
or distribution names; empty = none), else the repo's ``plugins.load`` when given, else all; ``plugins.require``
names plugins (or distributions) that must be present, with an optional version specifier.

A repository narrows the plugin set but cannot weaken redaction: a third-party plugin that only the repo's
``plugins.load``/``plugins.disable`` left out (the user's own choices did not) still registers its redaction
rules, and nothing else (status ``rules-only``).

Each plugin is imported, registered and asked for its items inside its own guard: a failure is reported
with the plugin's name and the error and the plugin is skipped; ``MEMTREE_STRICT_PLUGINS=1`` makes any
such failure fatal (:class:`PluginLoadError`).
"""

from __future__ import annotations

import importlib
import logging
import os
import re
import sys
import traceback
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from types import ModuleType
from typing import Any

import pluggy

from memtree_core import hookspecs, types
from memtree_core.registry import Register, Registry
from memtree_core.settings import Settings

# kind of registry -> the protocol its items must keep (None: none checked); memtree_register_<kind> fills it
KINDS: dict[str, type | None] = {
    "chunkers": types.Chunker, "filters": types.Filter, "redaction_rules": types.RedactionRule,
    "walkers": types.Walker, "tools": None, "embedders": types.Embedder, "summarizers": types.Summarizer,
    "rankers": types.Ranker, "selectors": types.Selector, "commands": None,
    # the search and ingest seams
    "retrievers": types.Retriever, "command_policies": types.CommandPolicy,
    "capture_adapters": types.CaptureAdapter, "output_replacers": types.OutputReplacer,
}
# kind of registry -> the register hook that fills it; a plugin's own tables and store backends too (store/)
REGISTRY_HOOKS = {kind: f"memtree_register_{kind}" for kind in KINDS} | {
    "store_migrations": "memtree_store_migrations", "store_backends": "memtree_store_backends"}

# What a plugin the repository left out still registers (status ``rules-only``).
PROTECTIVE_HOOKS = (REGISTRY_HOOKS["redaction_rules"], REGISTRY_HOOKS["command_policies"])

ENTRY_POINT_GROUP = "memtree"

log = logging.getLogger("memtree.plugins")


class PluginLoadError(Exception):
    """A plugin failed while MEMTREE_STRICT_PLUGINS=1."""


@dataclass
class PluginInfo:
    name: str
    source: str  # "builtin:<module>" or "entrypoint:<dist> <version>"
    status: str  # loaded | disabled | not-selected | rules-only | failed | missing
    error: str = ""
    provides: dict[str, list[str]] = field(default_factory=dict)
    settings: dict[str, Any] | None = None  # its effective own settings, when it declares a model
    refused_settings: list[str] = field(default_factory=list)  # what the repository may not set, and why
    sections: dict[str, Any] | None = None  # a built-in's top-level keys, effective values
    # items of its that broke their contract at run time: {"kind", "name", "error"[, "seen"]}, out of use
    failed_items: list[dict[str, str]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        """Its fields, leaving out those not set (``settings`` and ``sections`` only when None)."""
        return {k: v for k, v in asdict(self).items()
                if (v is not None if k in ("settings", "sections") else v or k in ("name", "source", "status"))}


@dataclass
class PluginSet:
    pm: pluggy.PluginManager
    registries: dict[str, Registry[Any]]
    report: list[PluginInfo]
    token_counter: Any
    # plugin name -> the model of its plugins.config.<name> values (memtree_settings_model)
    settings_models: dict[str, Any] = field(default_factory=dict)
    # built-in plugin name -> its BuiltinSettings (the top-level keys it owns)
    settings_sections: dict[str, Any] = field(default_factory=dict)
    # plugin name -> its effective settings (memtree_core.plugin_settings.apply)
    plugin_settings: dict[str, Any] = field(default_factory=dict)
    configured: bool = False  # its items' configure() were called (memtree_core.app.App)

    def __getattr__(self, kind: str) -> Registry[Any]:
        try:
            return self.__dict__["registries"][kind]
        except KeyError:
            raise AttributeError(kind) from None

    def info(self, name: str) -> PluginInfo | None:
        return next((p for p in self.report if p.name == name), None)

    @property
    def failures(self) -> list[PluginInfo]:
        """The plugins that failed to load or are missing, and those with an item that failed."""
        return [p for p in self.report if p.status in ("failed", "missing") or p.failed_items]

    def item_failed(self, kind: str, name: str, error: str) -> dict[str, str] | None:
        """Take item ``name`` out of registry ``kind`` and report it on its plugin's line, with ``error``;
        the failure as recorded, or None when no such item is registered."""
        registry = self.registries[kind]
        entry = registry.entry(name)
        if entry is None:
            return None
        registry.drop(name)
        info = self.info(entry.plugin)
        import time

        failure = {"kind": kind, "name": name, "error": error,
                   "seen": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        if info is not None:
            info.failed_items[:] = [f for f in info.failed_items if (f["kind"], f["name"]) != (kind, name)]
            info.failed_items.append(failure)
        return {"plugin": entry.plugin, "source": info.source if info else "?", **failure}

    def notify(self, hook_name: str, **kwargs: Any) -> None:
        """Call every plugin's implementation of a notification hook (``memtree_daemon_started``...), in
        pluggy's order, each in its own guard: one that raises is logged, and the others still run."""
        for impl in reversed(getattr(self.pm.hook, hook_name).get_hookimpls()):  # (pluggy calls the last first)
            try:
                _call_one(self.pm, hook_name, impl.plugin, **kwargs)
            except Exception:
                log.exception("plugin %r failed in %s", impl.plugin_name, hook_name)


def _names(value: str | None) -> list[str] | None:
    return None if value is None else [v.strip() for v in value.split(",") if v.strip()]


def short_error(exc: BaseException) -> str:
    """``Type: message (file:line)`` of where ``exc`` was raised, for a report line."""
    frames = traceback.extract_tb(exc.__traceback__)
    where = f" ({frames[-1].filename}:{frames[-1].lineno})" if frames else ""
    return f"{type(exc).__name__}: {exc}{where}"


def _entry_points() -> list[Any]:
    # importlib_metadata is imported here, not at module level: it is only needed when plugins load.
    from importlib_metadata import entry_points

    return list(entry_points(group=ENTRY_POINT_GROUP))


def builtin_modules() -> dict[str, str]:
    """The built-in plugins, short name -> module, in their listed order."""
    from memtree_plugins import BUILTINS

    return dict(BUILTINS)


def build(settings: Settings, environ: dict[str, str] | None = None, *,
          builtins: dict[str, str] | None = None,
          extra: list[tuple[str, ModuleType | object]] | None = None,
          user_plugins: Any = None, kinds: tuple[str, ...] | None = None) -> PluginSet:
    """Load and register every selected plugin and collect what each one provides.

    :param extra: (name, plugin object) pairs registered after the entry points, for tests and embedders
        of memtree.
    :param user_plugins: the ``plugins`` section of the user's own layers (without the repository's); with
        it, a plugin that only the repository left out keeps its redaction rules.  None: all choices are
        the user's.
    :param kinds: fill only these registries (keys of :data:`REGISTRY_HOOKS`) and ask for no token counter:
        the command line lists its commands this way without asking every plugin for everything.  An empty
        tuple asks for the plugins' settings models alone (:func:`memtree_core.project_settings.load_settings`).
    """
    env = os.environ if environ is None else environ
    strict = env.get("MEMTREE_STRICT_PLUGINS", "") not in ("", "0", "false", "no")
    disabled = set(_names(env.get("MEMTREE_DISABLE_PLUGINS")) or []) | set(settings.plugins.disable)
    env_only = _names(env.get("MEMTREE_LOAD_PLUGINS"))
    only = env_only if env_only is not None else (list(settings.plugins.load) or None)
    own = user_plugins if user_plugins is not None else settings.plugins
    own_disabled = set(_names(env.get("MEMTREE_DISABLE_PLUGINS")) or []) | set(own.disable)
    own_only = env_only if env_only is not None else (list(own.load) or None)

    def user_excludes(name: str, dist: str) -> bool:
        if name in own_disabled or dist in own_disabled:
            return True
        return own_only is not None and name not in own_only and dist not in own_only

    pm = pluggy.PluginManager("memtree")
    pm.add_hookspecs(hookspecs)
    if env.get("MEMTREE_TRACE_PLUGINS"):
        pm.trace.root.setwriter(sys.stderr.write)
        pm.enable_tracing()

    report: list[PluginInfo] = []

    def fail(info: PluginInfo, exc: BaseException | str) -> None:
        info.status = "failed"
        info.error = exc if isinstance(exc, str) else short_error(exc)
        if strict:
            raise PluginLoadError(f"plugin {info.name!r} ({info.source}) failed: {info.error} "
                                  f"[MEMTREE_STRICT_PLUGINS=1; unset it to skip broken plugins]")

    def register(info: PluginInfo, load: Callable[[], object]) -> None:
        report.append(info)
        if info.name in disabled:
            info.status = "disabled"
            return
        try:
            plugin = load()
            pm.register(_hashable(plugin), name=info.name)
        except Exception as exc:
            fail(info, exc)
            return
        try:
            pm.check_pending()
        except pluggy.PluginValidationError as exc:
            pm.unregister(name=info.name)
            fail(info, f"unknown hook: {exc}")
            return
        info.status = "loaded"

    def keep_rules(info: PluginInfo, load: Callable[[], object]) -> None:
        """Register only the redaction rules and command policies of a plugin the repository left out (if it
        has any): a repository narrows the plugin set but cannot weaken what keeps secrets out."""
        try:
            plugin = load()
            hooks = {name: hook for name in PROTECTIVE_HOOKS if (hook := getattr(plugin, name, None)) is not None}
            if not hooks:
                return
            pm.register(_Hooks(hooks), name=info.name)
        except Exception:
            return  # left out anyway: its failure is not the user's problem
        info.status = "rules-only"

    # The built-ins' hooks are trylast, and pluggy calls trylast implementations in registration order, so
    # in pluggy's order (the precedence, see hookspecs) the built-ins come last, in their listed order.
    listed = list((builtins if builtins is not None else builtin_modules()).items())
    for name, module in listed:
        register(PluginInfo(name, f"builtin:{module}", "pending"), lambda m=module: importlib.import_module(m))

    seen_dists: dict[str, str] = {}
    for ep in _entry_points():
        try:
            dist = ep.dist.name if ep.dist else "?"
            version = ep.dist.version if ep.dist else "?"
        except Exception as exc:  # a package half-installed or half-removed (pip running beside us)
            info = PluginInfo(ep.name, f"entrypoint:{ep.value}", "pending")
            report.append(info)
            fail(info, f"its distribution's metadata cannot be read ({short_error(exc)}); "
                       "reinstall the package that provides it")
            continue
        seen_dists[dist.lower()] = version
        seen_dists.setdefault(ep.name.lower(), version)
        info = PluginInfo(ep.name, f"entrypoint:{dist} {version}", "pending")
        if dist in disabled:
            disabled.add(ep.name)
        left_out = "disabled" if ep.name in disabled else (
            "not-selected" if only is not None and ep.name not in only and dist not in only else None)
        if left_out is None:
            register(info, ep.load)
            continue
        info.status = left_out
        report.append(info)
        if not user_excludes(ep.name, dist):
            keep_rules(info, ep.load)

    for name, obj in extra or []:
        register(PluginInfo(name, f"extra:{type(obj).__name__}", "pending"), lambda o=obj: o)

    def missing(name: str, source: str, message: str) -> None:
        info = PluginInfo(name, source, "missing")
        report.append(info)
        fail(info, message)
        info.status = "missing"

    # A repository's entry is shown only once valid, and never as install advice: it may name a typosquat.
    mine = own.require if user_plugins is not None else settings.plugins.require
    for number, (name, raw_spec) in enumerate(settings.plugins.require.items(), 1):
        theirs, spec = mine.get(name) != raw_spec, _specifier(name, raw_spec)
        if spec is None:
            what = "of the repository's .memtree.json" if theirs else f"{name!r}: {raw_spec!r}"
            missing(f"invalid requirement {number}", "required", f"plugins.require entry {what} is not a valid "
                    "requirement (a distribution name and a version specifier such as '>=1.0'); ignored")
            continue
        version = seen_dists.get(name.lower())
        advice = ("the repository's .memtree.json names it: install it only if you trust that name" if theirs
                  else f"pip install '{name}{spec}'")
        if version is None and not any(p.name == name and p.status == "loaded" for p in report):
            missing(name, "required", f"required plugin {name!r} is not installed ({advice})")
        elif spec and version and not spec.contains(version, prereleases=True):
            missing(name, f"required {spec}", f"plugin {name!r} {version} does not satisfy the required "
                                              f"'{spec}' ({advice})")

    # Before any register hook: a plugin whose settings model is unusable registers nothing.
    models, sections = _settings_models(pm, report, fail) if not kinds else ({}, {})
    registries: dict[str, Registry[Any]] = {kind: Registry(_singular(kind))
                                            for kind in REGISTRY_HOOKS}
    by_name = {p.name: p for p in report}
    for kind, hook_name in REGISTRY_HOOKS.items():
        if kinds is not None and kind not in kinds:
            continue
        # pluggy's call order (tryfirst, then the most recently registered, trylast last) is the precedence;
        # each plugin's hook runs in the reverse, so the one pluggy calls first has the last word: its
        # replaces=/remove see every other plugin's items.
        impls = getattr(pm.hook, hook_name).get_hookimpls()
        rank = {impl.plugin_name: i for i, impl in enumerate(reversed(impls))}
        for impl in impls:
            plugin_name = impl.plugin_name
            info = by_name.get(plugin_name)
            if info is None or info.status not in ("loaded", "rules-only") or pm.get_plugin(plugin_name) is None:
                continue
            reg = Register(registries[kind], plugin_name, rank=rank[plugin_name])
            before = set(registries[kind].names())
            try:
                _call_one(pm, hook_name, impl.plugin, register=reg)
            except Exception as exc:
                fail(info, exc)
                _withdraw(registries, plugin_name)
                pm.unregister(name=plugin_name)
                continue
            added = [n for n in registries[kind].names()
                     if n not in before or registries[kind].entry(n).plugin == plugin_name]  # type: ignore[union-attr]
            for n in added:
                problem = _not_a(kind, registries[kind].get(n))
                if problem and registries[kind].entry(n).plugin == plugin_name:  # type: ignore[union-attr]
                    registries[kind].drop(n)
                    info.failed_items.append({"kind": kind, "name": n, "error": problem})
            added = [n for n in added if n in registries[kind]]
            if added:
                info.provides.setdefault(kind, []).extend(
                    n for n in added if registries[kind].entry(n).plugin == plugin_name)  # type: ignore[union-attr]

    if kinds is not None:
        return PluginSet(pm, registries, report, None, models, sections)
    counter = pm.hook.memtree_token_counter(settings=settings)
    if counter is None:
        # Every budget needs one: say so now, in the report (and fatally under MEMTREE_STRICT_PLUGINS),
        # and make each use fail with the same sentence rather than with an AttributeError on None.
        message = ("no plugin provides a token counter (memtree_token_counter): the built-in 'tokens' plugin "
                   "is disabled or failed; re-enable it or install a plugin that provides one")
        missing("token counter", "required", message)
        counter = MissingTokenCounter(message)
    return PluginSet(pm, registries, report, counter, models, sections)


def _settings_models(pm: pluggy.PluginManager, report: list[PluginInfo],
                     fail: Callable[[PluginInfo, BaseException | str], None]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Each loaded plugin's own settings model (``memtree_settings_model``), checked: the models of the
    ``plugins.config.<name>`` values, and the built-ins' models of the top-level keys they own.  A plugin
    whose model is unusable, or claims a key the host or an earlier plugin owns, fails like one whose hook
    raised."""
    from memtree_core.plugin_settings import BuiltinSettings, check_model, claims, config_model

    models: dict[str, Any] = {}
    sections: dict[str, Any] = {}
    owner: dict[tuple[str, ...], str] = {claim: "the host's" for claim in claims(Settings)}
    for info in report:
        plugin = pm.get_plugin(info.name) if info.status == "loaded" else None
        if plugin is None or not hasattr(plugin, "memtree_settings_model"):
            continue
        try:
            model = next((m for m in _call_one(pm, "memtree_settings_model", plugin, name=info.name) if m is not None), None)
            problem = None if model is None else check_model(model, builtin=info.source.startswith("builtin:"))
        except Exception as exc:
            fail(info, exc)
            pm.unregister(name=info.name)
            continue
        if problem is None and model is not None and issubclass(model, BuiltinSettings):
            # one key twice, or a key that is a whole section of another owner's (or the reverse)
            taken = [(c, whose) for c in claims(model) for o, whose in owner.items()
                     if o == c or (len(o) == 1 and o[0] == c[0]) or (len(c) == 1 and c[0] == o[0])]
            if taken:
                (key, whose), = taken[:1]
                problem = (f"its settings key {'.'.join(key)} is already {whose} (two plugins cannot own one key; "
                           f"disable one of them)")
        if problem:
            fail(info, problem)
            pm.unregister(name=info.name)
        elif model is not None:
            if issubclass(model, BuiltinSettings):
                sections[info.name] = model
                owner.update({c: f"plugin {info.name!r}'s" for c in claims(model)})
            own = config_model(model)
            if own is not None:
                models[info.name] = own
    return models, sections


def _specifier(name: str, spec: str) -> Any:
    """``spec`` as a SpecifierSet when ``name`` is a distribution's name (PEP 508) and ``spec`` a version
    specifier (no URL, extras, marker or pip option), else None."""
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    try:
        ok = re.fullmatch(r"[A-Za-z0-9]([A-Za-z0-9._-]{0,98}[A-Za-z0-9])?", name) and len(spec) <= 100
        return SpecifierSet(spec) if ok else None
    except InvalidSpecifier:
        return None


def _not_a(kind: str, item: object) -> str | None:
    """Why ``item`` is not an item of ``kind`` (a member its protocol declares is missing), or None."""
    protocol = KINDS.get(kind)
    missing = [n for n in sorted(types.members(protocol)) if not hasattr(item, n)] if protocol else []
    if not missing:
        return None
    return f"not a {protocol.__name__} (memtree_core.types): it has no {', '.join(missing)}"


def _singular(kind: str) -> str:
    """``command_policies`` -> ``command policy`` (registry names appear in conflict errors)."""
    word = kind[:-3] + "y" if kind.endswith("ies") else kind.rstrip("s")
    return word.replace("_", " ")


class MissingTokenCounter:
    """Stands in when no plugin provides a token counter: any count raises the build's clear error."""

    name = "missing"

    def __init__(self, message: str) -> None:
        self.message = message

    def count(self, text: str) -> int:
        raise PluginLoadError(self.message)


class _Hooks:
    """A plugin's hook implementations on a plain object: a left-out plugin reduced to its protective hooks, or
    a plugin object pluggy cannot hold as it is (pluggy keeps plugins in sets, so one that is unhashable, a
    dataclass instance say, would break every other plugin's hook calls)."""

    def __init__(self, hooks: dict[str, Callable[..., Any]]) -> None:
        for name, hook in hooks.items():
            setattr(self, name, hook)


def _hashable(plugin: object) -> object:
    """``plugin`` itself, or when it cannot be hashed its ``memtree_*`` hook implementations on a :class:`_Hooks`."""
    try:
        hash(plugin)
    except TypeError:
        return _Hooks({name: getattr(plugin, name) for name in dir(plugin) if name.startswith("memtree_")})
    return plugin


def _call_one(pm: pluggy.PluginManager, hook_name: str, plugin: object, **kwargs: Any) -> Any:
    """Call one plugin's implementation of a hook through pluggy (so tracing and hook-call monitoring see
    it): each plugin gets its own :class:`Register`, which is how the host knows who supplied what."""
    others = [p for p in pm.get_plugins() if p is not plugin]
    return pm.subset_hook_caller(hook_name, remove_plugins=others)(**kwargs)


def _withdraw(registries: dict[str, Registry[Any]], plugin_name: str) -> None:
    """Undo everything a plugin did before it failed: what it registered goes, and what it removed or
    replaced (a built-in redaction rule, say) comes back, so a broken plugin leaves the others as they were."""
    for registry in registries.values():
        registry.withdraw(plugin_name)
