"""A project's settings: the host's keys, then the keys each loaded plugin owns, from every layer.

The plugin set depends on the settings (``plugins.load``/``plugins.disable``), and the settings' model on the
plugin set (each built-in owns its top-level keys, :class:`~memtree_core.plugin_settings.BuiltinSettings`),
so loading goes in three steps over files read once:

1. the host's keys alone, the plugin set among them (:func:`memtree_core.settings.host_settings`);
2. the plugins it selects, each declaring its model (:func:`memtree_core.plugins.build`);
3. every layer against the host's model composed with theirs, their ``plugins.config.<name>`` models included
   (:func:`memtree_core.settings.resolve`), then each plugin's own view (:func:`memtree_core.plugin_settings.apply`).

A key of a built-in that is not loaded (disabled, or failed to import) is dropped with a warning, in every
layer: switching a plugin off never makes the user's config an error.
"""

from __future__ import annotations

import importlib
import inspect
from pathlib import Path
from typing import Any

from memtree_core.plugin_settings import BuiltinSettings, apply, claims, compose
from memtree_core.plugins import PluginSet, build, builtin_modules
from memtree_core.settings import LoadedSettings, _norm, host_settings, read_layers, resolve


def load(home: Path, project_root: Path | None, environ: dict[str, str], **build_kwargs: Any,
         ) -> tuple[LoadedSettings, PluginSet]:
    """The project's settings and its plugin set.  Raise :class:`~memtree_core.settings.SettingsError` on a
    bad value in the user's own layers."""
    raw = read_layers(home, project_root, environ)
    host = host_settings(raw)  # its warnings come again, with the plugins' keys, from the full resolve
    plugins = build(host.settings, environ, user_plugins=host.user_plugins, **build_kwargs)
    loaded = resolve(raw, compose(plugins.settings_sections, plugins.settings_models), dormant=_Dormant(plugins))
    apply(loaded, plugins)
    return loaded, plugins


def load_settings(home: Path, project_root: Path | None, environ: dict[str, str] | None = None) -> LoadedSettings:
    """:func:`load` for the settings alone: the plugins are loaded for their models, and asked for nothing else."""
    import os

    env = dict(os.environ) if environ is None else environ
    return load(home, project_root, env, kinds=())[0]


def _builtin_model(name: str) -> type[BuiltinSettings] | None:
    """A built-in's BuiltinSettings, read from its module without registering it (None when it declares none
    or cannot be imported)."""
    try:
        hook = getattr(importlib.import_module(builtin_modules()[name]), "memtree_settings_model", None)
        if hook is None:
            return None
        model = hook(name=name) if "name" in inspect.signature(hook).parameters else hook()
    except Exception:
        return None  # its failure is in the plugin report already
    return model if isinstance(model, type) and issubclass(model, BuiltinSettings) else None


class _Dormant:
    """Why a key path no loaded model knows is no mistake: a built-in not loaded in this project owns it, or
    it is the ``plugins.config`` of a plugin that declares no settings (None: a mistake).  A disabled plugin's
    module is imported only when a config names one of its keys."""

    def __init__(self, plugins: PluginSet) -> None:
        self.plugins = plugins
        self._owners: dict[tuple[str, ...], str] | None = None

    def __call__(self, path: tuple[str, ...]) -> str | None:
        if [_norm(k) for k in path[:2]] == ["plugins", "config"] and len(path) == 3:
            if _norm(path[2]) in {_norm(p.name) for p in self.plugins.report}:
                return ""  # installed, and declares no settings (or is not loaded): nothing to check
            return "no installed plugin of that name declares settings (see memtree plugins)"
        if self._owners is None:
            self._owners = {}
            for name in builtin_modules():
                info = self.plugins.info(name)
                if info is not None and info.status == "loaded":
                    continue
                model = _builtin_model(name)
                for claim in claims(model) if model is not None else []:
                    key = tuple(_norm(k) for k in claim)
                    self._owners.setdefault(key, name)
                    self._owners.setdefault(key[:1], name)  # a whole section of it
        # Asked for a path whose last key alone is unknown: one key long, a whole section (or top-level key) no
        # loaded model has; longer, a key inside a section the host or a loaded plugin shares with it, which is
        # the dormant plugin's only if it declares that very key (``capture.replace``), else a plain mistake.
        owner = self._owners.get(tuple(_norm(k) for k in path)[:2])
        if owner is None:
            return None
        return f"it is plugin {owner!r}'s setting, and that plugin is not loaded (disabled or failed: see memtree plugins)"
