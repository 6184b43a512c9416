"""Per-plugin settings (as tox's ``tox_add_core_config`` and datasette's ``plugin_config``): a plugin declares
its pydantic model through ``memtree_settings_model``, a :class:`PluginSettings` whose values live under
``plugins.config.<name>`` or, for a built-in, a :class:`BuiltinSettings` of the top-level keys it owns.  Both
are sections of the project's settings model (:func:`compose`), so they come from the same sources, under the
same repository rules and messages, as every setting (:mod:`memtree_core.settings`).
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, create_model, field_validator

from memtree_core.settings import REPO_SAFE, PluginSet, Section, Settings, UserOnly, _strict_flag

__all__ = ["REPO_SAFE", "BuiltinSettings", "PluginSettings", "Section", "UserOnly", "check_model", "compose"]


class PluginSettings(BaseModel):
    """Base of every plugin's settings model: camelCase keys in files, unknown keys refused, no NaN or
    infinity, strict booleans.  Every field needs a default (a plugin works with no configuration)."""

    model_config = Section.model_config

    @field_validator("*", mode="before")
    @classmethod
    def _strict_booleans(cls, value: Any, info: ValidationInfo) -> Any:
        field = cls.model_fields.get(info.field_name or "")
        return _strict_flag(value) if field is not None and field.annotation is bool else value


class BuiltinSettings(BaseModel):
    """Base of a built-in plugin's settings model: its fields are the top-level keys of config.json the plugin
    owns (``retention``, ``search``, ``ollamaUrl`` ...), with their ``MEMTREE_<SECTION>__<KEY>`` variables.

    A field whose type is a :class:`~memtree_core.settings.Section` owns the keys of that section it declares:
    two plugins (or a plugin and the host) may share a section when their keys differ; one key claimed twice
    fails the second plugin.  Mark with :data:`REPO_SAFE` what a repository may set, and with
    :class:`~memtree_core.settings.UserOnly` why the rest is the user's.  Checks belong in a field's type
    (``Annotated[str, AfterValidator(...)]``) or its section: a validator method of this class would not
    follow its keys into the project's model.  The optional field ``config`` (a :class:`PluginSettings`)
    holds its ``plugins.config.<name>`` keys; only a built-in may own top-level keys."""

    model_config = Section.model_config

    if not TYPE_CHECKING:
        def __getattr__(self, item: str) -> Any:
            # its plugins.config values read as its own too (``own.grep_engine`` is ``own.config.grep_engine``),
            # as they do for a plugin that has only those.
            config = self.__dict__.get("config")
            if isinstance(config, PluginSettings) and item in type(config).model_fields:
                return getattr(config, item)
            return super().__getattr__(item)


def _section_of(info: Any) -> type[Section] | None:
    sub = info.annotation
    return sub if isinstance(sub, type) and issubclass(sub, Section) else None


def claims(model: type[BaseModel]) -> list[tuple[str, ...]]:
    """The key paths (camelCase) a settings model owns: a top-level key, or a key inside a section."""
    out: list[tuple[str, ...]] = []
    for name, info in model.model_fields.items():
        if name == "config" and issubclass(model, BuiltinSettings):
            continue
        alias = info.alias or name
        section = _section_of(info)
        if section is None:
            out.append((alias,))
        else:
            out.extend((alias, sub.alias or key) for key, sub in section.model_fields.items())
    return out


def config_model(model: type[BaseModel]) -> type[PluginSettings] | None:
    """The model of a plugin's ``plugins.config.<name>`` values: the model itself, or a built-in's
    ``config`` field."""
    if issubclass(model, PluginSettings):
        return model
    info = model.model_fields.get("config")
    return info.annotation if info is not None else None  # type: ignore[return-value]


def check_model(model: Any, *, builtin: bool = False) -> str | None:
    """Why ``model`` cannot be a plugin's settings model, or None."""
    bases = (PluginSettings, BuiltinSettings) if builtin else (PluginSettings,)
    if not (isinstance(model, type) and issubclass(model, bases)):
        if isinstance(model, type) and issubclass(model, BuiltinSettings):
            return ("only a built-in plugin may own top-level settings keys (BuiltinSettings); declare a "
                    "memtree_core.plugin_settings.PluginSettings, whose values live under plugins.config.<name>")
        return f"memtree_settings_model returned {model!r}, not a subclass of memtree_core.plugin_settings." \
               "PluginSettings"
    required = [name for name, f in model.model_fields.items() if f.is_required()]
    if required:
        return f"its settings {', '.join(required)} have no default (every plugin setting needs one)"
    if issubclass(model, BuiltinSettings):
        checks = model.__pydantic_decorators__
        if checks.field_validators or checks.model_validators:
            return "its checks must be in its fields' types or sections (a top-level key leaves the class's " \
                   "validator methods behind when it joins the project's settings)"
        own = model.model_fields.get("config")
        if own is not None and not (isinstance(own.annotation, type) and issubclass(own.annotation, PluginSettings)):
            return "its config field must be a PluginSettings (the plugins.config.<name> values)"
        shadowed = sorted(set(own.annotation.model_fields) & set(model.model_fields)) if own is not None else []
        if shadowed:
            return f"its plugins.config key {shadowed[0]!r} has the name of one of its top-level keys"
        for name, info in model.model_fields.items():
            if name != "config" and isinstance(info.annotation, type) and issubclass(info.annotation, BaseModel) \
                    and _section_of(info) is None:
                return f"its section {name!r} must be a memtree_core.settings.Section"
    return None


def compose(owners: dict[str, type[BuiltinSettings]], configs: dict[str, type[PluginSettings]] | None = None,
            ) -> type[Settings]:
    """The project's settings model: the host's :class:`~memtree_core.settings.Settings` with every owner's
    top-level keys (a section two of them declare holds the keys of both) and each plugin's own model as
    ``plugins.config.<name>``.  The owners' keys are disjoint (:func:`memtree_core.plugins.build` fails a plugin
    that claims a taken key).  The same models give the same class, so two loads compare equal."""
    return _compose(tuple(sorted(owners.values(), key=lambda m: f"{m.__module__}.{m.__qualname__}")),
                    tuple(sorted((configs or {}).items())))


@functools.cache
def _compose(key: tuple[type[BuiltinSettings], ...], configs: tuple[tuple[str, type[PluginSettings]], ...],
             ) -> type[Settings]:
    parts: dict[str, list[tuple[Any, Any]]] = {}  # field name -> [(section or None, FieldInfo)]
    for name, info in Settings.model_fields.items():
        parts.setdefault(name, []).append((_section_of(info), info))
    for model in key:
        for name, info in model.model_fields.items():
            if name != "config":
                parts.setdefault(name, []).append((_section_of(info), info))
    fields: dict[str, Any] = {}
    for name, found in parts.items():
        if len(found) == 1:
            if name not in Settings.model_fields:
                fields[name] = (found[0][1].annotation, found[0][1])
            continue
        sections = tuple(section for section, _info in found)
        merged = create_model(sections[0].__name__, __base__=sections)  # type: ignore[call-overload]
        metadata = [m for _section, info in found for m in info.metadata]
        fields[name] = (Annotated[(merged, *metadata)] if metadata else merged, merged())
    own = create_model("PluginsConfig", __config__=ConfigDict(extra="forbid"), **{  # type: ignore[call-overload]
        name.replace("-", "_").replace(".", "_"): (model, Field(model(), alias=name)) for name, model in configs})
    plugins = create_model("PluginSet", __base__=PluginSet, config=(own, own()))
    return create_model("Settings", __base__=Settings, __module__=Settings.__module__, plugins=(plugins, plugins()),
                        **fields)


def view(model: type[BuiltinSettings], settings: Settings, config: PluginSettings | None) -> BuiltinSettings:
    """A built-in plugin's own settings, taken from the project's: its fields, each section holding the
    plugin's keys only, and what was set by a layer (``model_fields_set``) kept."""
    values: dict[str, Any] = {}
    for name, info in model.model_fields.items():
        if name == "config":
            if config is not None:
                values[name] = config
            continue
        value = getattr(settings, name)
        section = _section_of(info)
        if section is not None and type(value) is not section:
            value = section.model_validate(value.model_dump(include=set(section.model_fields), exclude_unset=True))
        values[name] = value
    return model.model_construct(_fields_set=settings.model_fields_set & set(values), **values)


def apply(loaded: Any, plugins: Any) -> None:
    """Each declaring plugin's settings, taken from ``loaded.settings`` (composed with its model), into
    ``plugins`` (its ``plugin_settings`` and each report entry, with what the repository may not set): a
    third-party plugin's ``plugins.config.<name>`` values, a built-in's top-level keys with its
    ``plugins.config`` values as ``config``."""
    config = loaded.settings.plugins.config
    values = {name: getattr(config, name.replace("-", "_").replace(".", "_")) for name in plugins.settings_models}
    own: dict[str, Any] = dict(values)
    for name, model in plugins.settings_sections.items():
        own[name] = view(model, loaded.settings, values.get(name))
    plugins.plugin_settings = own
    for name in own:
        info = plugins.info(name)
        if info is not None:
            if name in values:
                info.settings = values[name].model_dump(mode="json", by_alias=True)
                info.refused_settings = loaded.refused.get(name, [])
            if name in plugins.settings_sections:
                info.sections = own[name].model_dump(mode="json", by_alias=True, exclude={"config"})
