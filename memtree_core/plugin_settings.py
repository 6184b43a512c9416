"""Per-plugin settings, in the style of tox's ``tox_add_core_config`` and datasette's ``plugin_config``.

A plugin declares its own pydantic model (a :class:`PluginSettings`) through ``memtree_settings_model``; its
values live under ``plugins.config.<plugin name>`` and come from the same layers as every setting::

    defaults < $MEMTREE_HOME/config.json < the repo's .memtree.json < MEMTREE_PLUGINS__CONFIG__<NAME>__<KEY>

The untrusted-repository rule holds here too: a repository may set only the fields the plugin marks with
:data:`REPO_SAFE`, and its other or out-of-bound values are dropped with a warning (``memtree plugins``
lists them), never an error.  A bad value in the user's own layers is an error naming the file or variable,
the key and what it takes.  Booleans are strict (true/false, or the strings "true"/"false"/"1"/"0").
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError, ValidationInfo, field_validator
from pydantic.alias_generators import to_camel

from memtree_core.settings import PluginConfigLayer, SettingsError, _shown, _strict_flag


class _RepoSafe:
    def __repr__(self) -> str:
        return "REPO_SAFE"


# Mark a field a repository's .memtree.json may set: ``max_hits: Annotated[int, Field(ge=1, le=50), REPO_SAFE]``.
# Only what can neither weaken a protection, send data anywhere, nor size memory, disk or CPU use.
REPO_SAFE = _RepoSafe()


class PluginSettings(BaseModel):
    """Base of every plugin's settings model: camelCase keys in files, unknown keys refused, no NaN or
    infinity, strict booleans.  Every field needs a default (a plugin works with no configuration)."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid",
                              allow_inf_nan=False)

    @field_validator("*", mode="before")
    @classmethod
    def _strict_booleans(cls, value: Any, info: ValidationInfo) -> Any:
        field = cls.model_fields.get(info.field_name or "")
        return _strict_flag(value) if field is not None and field.annotation is bool else value


def check_model(model: Any) -> str | None:
    """Why ``model`` cannot be a plugin's settings model, or None."""
    if not (isinstance(model, type) and issubclass(model, PluginSettings)):
        return f"memtree_settings_model returned {model!r}, not a subclass of memtree_core.plugin_settings." \
               "PluginSettings"
    required = [name for name, f in model.model_fields.items() if f.is_required()]
    if required:
        return f"its settings {', '.join(required)} have no default (every plugin setting needs one)"
    return None


def _norm(key: str) -> str:
    return key.replace("_", "").replace("-", "").lower()


def _field(model: type[PluginSettings], key: str) -> tuple[str, Any] | None:
    """(camelCase alias, field info) for a key as a file or an environment variable spells it."""
    for name, info in model.model_fields.items():
        alias = info.alias or name
        if _norm(key) in (_norm(name), _norm(alias)):
            return alias, info
    return None


def _plain(text: str) -> str:
    """A name as written when it is short and printable, else its cut repr (a hostile file cannot flood)."""
    return text if len(text) <= 60 and text.isprintable() else _shown(text)


def _keys(model: type[PluginSettings]) -> str:
    return ", ".join(info.alias or name for name, info in model.model_fields.items()) or "none"


def _messages(exc: ValidationError) -> str:
    return "; ".join(f"{e['msg'].removeprefix('Value error, ').lower()} (got {_shown(e.get('input'))})"
                     for e in exc.errors())


def resolve(models: dict[str, type[PluginSettings]], layers: list[PluginConfigLayer],
            known_plugins: set[str]) -> tuple[dict[str, PluginSettings], dict[str, list[str]], list[str]]:
    """Every declaring plugin's effective settings, the repository keys refused per plugin, and warnings
    about ``plugins.config`` entries that name no plugin.  Raise :class:`SettingsError` for a bad value in
    the user's own layers."""
    by_norm = {_norm(name): name for name in models}
    known = {_norm(n) for n in known_plugins}
    merged: dict[str, dict[str, Any]] = {name: {} for name in models}
    refused: dict[str, list[str]] = {}
    warnings: list[str] = []
    for layer in layers:
        if not isinstance(layer.config, dict):
            problem = f"{layer.origin}: plugins.config must be an object of {{plugin name: {{key: value}}}}"
            if layer.repo:
                warnings.append(problem + " (ignored)")
                continue
            raise SettingsError(problem)
        for given, values in layer.config.items():
            plugin = by_norm.get(_norm(str(given)))
            if plugin is None:
                if _norm(str(given)) not in known:
                    warnings.append(f"{layer.origin}: plugins.config.{_plain(str(given))} ignored: no installed "
                                    f"plugin of that name declares settings (see memtree plugins)")
                continue
            model = models[plugin]
            where = f"plugins.config.{plugin}"
            if not isinstance(values, dict):
                problem = f"{layer.origin}: {where} must be an object of settings (got {_shown(values)})"
                if layer.repo:
                    refused.setdefault(plugin, []).append(f"{problem}; ignored")
                    continue
                raise SettingsError(problem)
            for key, raw in values.items():
                origin = layer.origins.get((str(given), str(key)), layer.origin)
                hit = _field(model, str(key))
                if hit is None:
                    problem = f"{origin}: {where}: unknown key {_shown(str(key))} ({plugin}'s settings: {_keys(model)})"
                    if layer.repo:
                        refused.setdefault(plugin, []).append(f"{problem}; ignored")
                        continue
                    raise SettingsError(problem)
                alias, info = hit
                if layer.repo and not any(m is REPO_SAFE for m in info.metadata):
                    refused.setdefault(plugin, []).append(
                        f"{origin}: {where}.{alias} ignored: only your own config or MEMTREE_* environment may set "
                        f"it (plugin {plugin!r} does not mark it repo-safe)")
                    continue
                try:
                    model.model_validate({alias: raw})
                except ValidationError as exc:
                    problem = f"{origin}: {where}.{alias}: {_messages(exc)}"
                    if layer.repo:
                        refused.setdefault(plugin, []).append(f"{problem}; ignored")
                        continue
                    raise SettingsError(problem) from None
                merged[plugin][alias] = raw
    return {name: models[name].model_validate(values) for name, values in merged.items()}, refused, warnings


def apply(loaded: Any, plugins: Any) -> None:
    """Resolve every declaring plugin's settings from ``loaded``'s layers into ``plugins`` (its
    ``plugin_settings`` and each report entry), and add what was refused or ignored to the config warnings
    ``memtree info`` shows."""
    values, refused, warnings = resolve(plugins.settings_models, loaded.plugin_config,
                                        {p.name for p in plugins.report})
    plugins.plugin_settings = values
    for name, model in values.items():
        info = plugins.info(name)
        if info is not None:
            info.settings = model.model_dump(mode="json", by_alias=True)
            info.refused_settings = refused.get(name, [])
        loaded.warnings.extend(refused.get(name, []))
    loaded.warnings.extend(warnings)
