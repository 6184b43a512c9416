"""Settings: the spec's ``config.json`` keys with its defaults, layered

    defaults < user config ($MEMTREE_HOME/config.json) < the repo's .memtree.json < MEMTREE_* environment

Keys are camelCase in files (as in the spec); environment variables use ``__`` between levels and ignore
case and underscores inside a key, so ``MEMTREE_CAPTURE__MAX_BYTES`` sets ``capture.maxBytes``.
Each layer is validated on its own, so an error names the file (or variable), the key and the type.

This module holds the host's own keys (:class:`Settings`: capture's size cap and Bash switch, redaction's gate,
the daemon, the store, the plugin set) and the layering.  Every other key belongs to the built-in plugin
that uses it, which declares it (:class:`memtree_core.plugin_settings.BuiltinSettings`); the project's model
is the host's composed with the loaded plugins' (:mod:`memtree_core.project_settings`).

The repository's ``.memtree.json`` arrives with the code, so it is untrusted input: it may set only the fields
marked :data:`REPO_SAFE` (its plugin set, budgets, search defaults and the like).  Whatever weakens a
protection, sends data off the machine or sizes resources and retention is the user's alone (their
``config.json`` or ``MEMTREE_*`` variables; :class:`UserOnly` says why).  A repository's other keys, and its
bad or out-of-bound values, are dropped with a warning (``memtree info`` lists them), never an error: a
cloned repository cannot stop memtree from working.  Every check is made on the parsed value, never on the
raw JSON.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError
from pydantic.alias_generators import to_camel
from pydantic_settings import BaseSettings, SettingsConfigDict

REPO_CONFIG_NAME = ".memtree.json"
# MEMTREE_* variables that are not settings keys (read directly where they matter).
NON_SETTING_ENV = {"HOME", "SQLITE", "LOAD_PLUGINS", "DISABLE_PLUGINS", "STRICT_PLUGINS", "TRACE_PLUGINS", "DEBUG", "HOOK_SENDER",
                   "GREP_ENGINE",  # grep: force ripgrep or the Python fallback (memtree_plugins.wrappers)
                   "DAEMON_EXEC"}  # start the daemon as a new interpreter, not a fork (memtree_core.daemon.control)


class SettingsError(Exception):
    """A config file or variable holds a bad value; the message names where, which key and what type."""


def _strict_flag(value: Any) -> bool:
    """A boolean setting takes a real boolean or the strings "true"/"false"/"1"/"0" (env variables are
    strings), nothing else: "off", "no", 0.0 or a number are mistakes, not a quiet ``False``."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "1"):
        return True
    if isinstance(value, str) and value.strip().lower() in ("false", "0"):
        return False
    raise ValueError('expected true or false (or the strings "true", "false", "1", "0")')


Flag = Annotated[bool, BeforeValidator(_strict_flag)]
MIB = 1024 * 1024
MIN_INTERVAL_MS = 100  # a walker that wakes more often than this only burns the shared CPU


class _RepoSafe:
    def __repr__(self) -> str:
        return "REPO_SAFE"


# Mark a field a repository's .memtree.json may set (and everything under it, for a section):
# ``max_hits: Annotated[int, Field(ge=1, le=50), REPO_SAFE]``.  Only what can neither weaken a protection,
# send data anywhere, nor size memory, disk or CPU use.  Every other field is the user's alone.
REPO_SAFE = _RepoSafe()


class UserOnly:
    """Why a field is the user's alone, for the warning a repository that sets it gets:
    ``ollama_url: Annotated[str, UserOnly("it can send data off this machine")]``.  Without one the reason
    given is :data:`SIZES`."""

    def __init__(self, reason: str) -> None:
        self.reason = reason

    def __repr__(self) -> str:
        return f"UserOnly({self.reason!r})"


SIZES = "it sizes memory, disk, CPU or retention"


class Section(BaseModel):
    """Base of a section of config.json (the host's and the built-in plugins'): camelCase keys, unknown keys
    refused, no NaN or infinity."""

    # NaN and infinity pass no bound check (NaN >= 0 is false, yet not an error): refuse them outright.
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid", allow_inf_nan=False)


# The reason a repository may not set a capture switch (``capture.bash``, ``redaction.*``, and the selectors
# plugin's ``capture.replace``).
WHAT_IS_CAPTURED = "it decides what is captured or redacted"


class Capture(Section):
    # one capture is held in memory whole (and redacted as one string): keep it bounded.
    max_bytes: int = Field(100000, ge=1, le=32 * MIB)
    # a protection, read wherever a command's output could be stored (hook captures and the bash tool):
    # the host's, so that no plugin being disabled can switch it back on.
    bash: Annotated[Flag, UserOnly(WHAT_IS_CAPTURED)] = True
    # ``capture.replace`` is the selectors plugin's (its output replacer's), ``capture.filterMinSize`` the
    # filters plugin's: each declares its keys of this section.


class Redaction(Section):
    enabled: Flag = True


class Daemon(Section):
    # the daemon exits after this many seconds with no MCP session and no capture.
    idle_timeout_s: float = Field(1800, ge=1, le=7 * 86400)


class StoreSettings(Section):
    # SQLite's synchronous mode.  "normal": a commit survives the daemon's crash or SIGKILL; an OS crash or
    # power loss can lose the last commits (never corrupt the store).  "full": those survive too, at the cost
    # of an fsync per commit.  User-only: a repository's config cannot change it.
    synchronous: Literal["normal", "full"] = "normal"


class PluginSet(Section):
    # A repository chooses its plugin set (narrowing the user's, never widening it: see load_settings).
    load: Annotated[list[str], REPO_SAFE] = []
    disable: Annotated[list[str], REPO_SAFE] = []
    require: Annotated[dict[str, str], REPO_SAFE] = {}  # distribution or plugin name -> version specifier


class Settings(BaseSettings):
    """The host's own keys of config.json; each built-in plugin adds the top-level keys it owns
    (:func:`memtree_core.plugin_settings.compose`), so a project's settings model is this one plus theirs."""

    model_config = SettingsConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid",
                                      allow_inf_nan=False)

    capture: Capture = Capture()
    redaction: Annotated[Redaction, UserOnly(WHAT_IS_CAPTURED)] = Redaction()
    daemon: Daemon = Daemon()
    store: Annotated[StoreSettings, UserOnly("it decides how durable your captures are")] = StoreSettings()
    plugins: PluginSet = PluginSet()

    @classmethod
    def settings_customise_sources(cls, settings_cls, init_settings, env_settings, dotenv_settings,
                                   file_secret_settings):  # type: ignore[override]
        # Layers are merged by load_settings(); the result arrives as init kwargs.
        return (init_settings,)


class ConfigLayer:
    """One layer's raw values and where they came from."""

    def __init__(self, origin: str, data: dict[str, Any],
                 env_origins: dict[tuple[str, ...], str] | None = None) -> None:
        self.origin = origin
        self.data = data
        self.env_origins = env_origins or {}  # key path -> the variable that set it
        self.plugin_origins: dict[tuple[str, str], str] = {}  # (plugin, key) under plugins.config -> variable


class PluginConfigLayer:
    """One layer's ``plugins.config`` object, ``{plugin name: {key: value}}`` as written: each plugin's own
    model validates it once the plugins are loaded (:mod:`memtree_core.plugin_settings`)."""

    def __init__(self, origin: str, config: Any, *, repo: bool = False,
                 origins: dict[tuple[str, str], str] | None = None) -> None:
        self.origin = origin
        self.config = config
        self.repo = repo
        self.origins = origins or {}  # (plugin, key) as written -> the environment variable that set it


def _take_plugin_config(layer: ConfigLayer) -> Any:
    """Remove ``plugins.config`` from a layer and return it (None when absent): the core model does not know
    the plugins' keys."""
    plugins = layer.data.get("plugins")
    if isinstance(plugins, dict) and "config" in plugins:
        plugins = dict(plugins)
        config = plugins.pop("config")
        layer.data = {**layer.data, "plugins": plugins}
        return config
    return None


def _describe(err: dict[str, Any], model: type[BaseModel]) -> str:
    loc = ".".join(str(p) for p in err["loc"])
    if err["type"] == "extra_forbidden":
        return f"unknown key {loc!r}"
    return f"{loc}: {_message(err)} (got {_shown(err.get('input'))})"


def _shown(value: Any, limit: int = 80) -> str:
    """A value's repr for a message, cut: a hostile config must not flood ``memtree info``."""
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + f"… ({len(text):,} chars)"


def _plain(text: str) -> str:
    """A name as written when it is short and printable, else its cut repr (a hostile file cannot flood)."""
    return text if len(text) <= 60 and text.isprintable() else _shown(text)


def _message(err: dict[str, Any]) -> str:
    # pydantic prefixes a validator's own message with "Value error, "; the message alone reads better.
    return err["msg"].removeprefix("Value error, ").lower()


def _validate_layer(layer: ConfigLayer, model: type[BaseModel]) -> None:
    try:
        model.model_validate(layer.data)
    except ValidationError as exc:
        details = "; ".join(_describe(e, model) for e in exc.errors())
        raise SettingsError(f"{layer.origin}: {details}") from None


MAX_CONFIG_BYTES = 1024 * 1024  # a config file is a few hundred bytes; more is a mistake or an attack


def _read_text(path: Path) -> str | None:
    """The file's text, or None when there is none; only a regular file of at most MAX_CONFIG_BYTES is read,
    so a FIFO, a device or a huge file in a cloned repository can neither hang memtree nor fill its memory."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise SettingsError(f"{path}: cannot read it: {exc.strerror or exc}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise SettingsError(f"{path}: not a regular file")
        if info.st_size > MAX_CONFIG_BYTES:
            raise SettingsError(f"{path}: {info.st_size:,} bytes; a config file may hold at most "
                                f"{MAX_CONFIG_BYTES:,}")
        with os.fdopen(os.dup(fd), "rb") as f:
            raw = f.read(MAX_CONFIG_BYTES + 1)
    except OSError as exc:
        raise SettingsError(f"{path}: cannot read it: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
    if len(raw) > MAX_CONFIG_BYTES:
        raise SettingsError(f"{path}: more than {MAX_CONFIG_BYTES:,} bytes; a config file may not be that big")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SettingsError(f"{path}: not UTF-8 text (byte {exc.start})") from None


def _read_json(path: Path) -> ConfigLayer | None:
    text = _read_text(path)
    if text is None:
        return None
    try:
        data = json.loads(text) if text.strip() else {}
    except json.JSONDecodeError as exc:
        raise SettingsError(f"{path}: not valid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from None
    except RecursionError:
        raise SettingsError(f"{path}: nested too deeply to be a config file") from None
    if not isinstance(data, dict):
        raise SettingsError(f"{path}: expected a JSON object at the top level")
    return ConfigLayer(str(path), data)


def _norm(key: str) -> str:
    return key.replace("_", "").lower()


def _field_tree(model: type[BaseModel]) -> dict[str, tuple[str, Any]]:
    """normalised key -> (camelCase alias, nested model or None)."""
    out: dict[str, tuple[str, Any]] = {}
    for name, info in model.model_fields.items():
        alias = info.alias or name
        sub = info.annotation if isinstance(info.annotation, type) and issubclass(info.annotation, BaseModel) else None
        out[_norm(name)] = (alias, sub)
        out[_norm(alias)] = (alias, sub)
    return out


# The not-loaded built-in plugin that owns a key path (as written; None: no plugin does), so that a disabled
# plugin's setting is a warning, not an unknown key.
Dormant = Callable[[tuple[str, ...]], "str | None"]


def _dormant_warning(where: str, key: str, plugin: str) -> str:
    return (f"{where}: {_plain(key)} ignored: it is plugin {plugin!r}'s setting, and that plugin is not loaded "
            f"(disabled or failed: see memtree plugins)")


def _env_json(var: str, raw: str) -> Any:
    try:
        return json.loads(raw)
    except json.JSONDecodeError:
        raise SettingsError(f"environment variable {var}: expected JSON") from None


def _env_layer(environ: dict[str, str], model: type[BaseModel], dormant: Dormant | None = None,
               warnings: list[str] | None = None) -> ConfigLayer:
    data: dict[str, Any] = {}
    origins: list[str] = []
    by_key: dict[tuple[str, ...], str] = {}
    plugin_origins: dict[tuple[str, str], str] = {}
    for var, raw in environ.items():
        if not var.upper().startswith("MEMTREE_"):
            continue
        rest = var[len("MEMTREE_"):]
        if rest.upper() in NON_SETTING_ENV:
            continue
        parts = [p for p in rest.split("__") if p]
        if [_norm(p) for p in parts[:2]] == ["plugins", "config"] and len(parts) < 4:
            raise SettingsError(f"environment variable {var}: name a plugin and one of its keys, "
                                f"MEMTREE_PLUGINS__CONFIG__<PLUGIN>__<KEY> (see memtree plugins --json)")
        if len(parts) >= 4 and [_norm(p) for p in parts[:2]] == ["plugins", "config"]:
            # a plugin's own setting: MEMTREE_PLUGINS__CONFIG__<PLUGIN>__<KEY>; its model checks the key
            plugin, key = parts[2].lower(), "__".join(parts[3:])
            value = _env_json(var, raw) if raw[:1] != "" and raw[:1] in "[{" else raw
            data.setdefault("plugins", {}).setdefault("config", {}).setdefault(plugin, {})[key] = value
            plugin_origins[(plugin, key)] = f"environment variable {var}"
            origins.append(var)
            continue
        node: Any = model
        target = data
        path_ok = bool(parts)
        for i, part in enumerate(parts):
            tree = _field_tree(node)
            hit = tree.get(_norm(part))
            if hit is None:
                owner = dormant(tuple(parts[:i + 1])) if dormant else None
                if owner is not None and warnings is not None:
                    warnings.append(_dormant_warning(f"environment variable {var}", ".".join(parts), owner))
                    path_ok = False
                    break
                raise SettingsError(f"environment variable {var}: no settings key {part!r} "
                                    f"(known: {', '.join(sorted({a for a, _ in tree.values()}))})")
            alias, sub = hit
            if i == len(parts) - 1:
                json_expected = sub is not None or (raw[:1] != "" and raw[:1] in "[{")
                target[alias] = _env_json(var, raw) if json_expected else raw
            else:
                if sub is None:
                    path_ok = False
                    break
                target = target.setdefault(alias, {})
                node = sub
        if path_ok:
            origins.append(var)
            by_key[tuple(_field_tree_alias_path(parts, model))] = f"environment variable {var}"
    layer = ConfigLayer("environment (" + ", ".join(origins) + ")" if origins else "environment", data, by_key)
    layer.plugin_origins = plugin_origins
    return layer


def _field_tree_alias_path(parts: list[str], model: type[BaseModel]) -> list[str]:
    """The camelCase key path an environment variable's ``__``-separated parts name."""
    node: Any = model
    out: list[str] = []
    for part in parts:
        alias, node = _field_tree(node)[_norm(part)]
        out.append(alias)
        if node is None:
            break
    return out


def _merge(base: dict[str, Any], top: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in top.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out


class LoadedSettings:
    """The merged settings plus what went into them (for ``memtree info``)."""

    def __init__(self, settings: Settings, files: list[str], warnings: list[str],
                 origins: dict[str, str] | None = None, user_plugins: PluginSet | None = None,
                 plugin_config: list[PluginConfigLayer] | None = None) -> None:
        self.settings = settings
        # each layer's plugins.config, weakest first: resolved against the plugins' models once they load
        self.plugin_config = plugin_config or []
        self.files = files
        self.warnings = warnings
        # dotted camelCase key -> the file or variable that set it last (absent = the default)
        self.origins = origins or {}
        # the plugin choices of the user's own layers alone: what the repository narrowed is told apart
        self.user_plugins = user_plugins if user_plugins is not None else settings.plugins

    def origin(self, key: str) -> str:
        return self.origins.get(key, "default")


def user_config_path(home: Path) -> Path:
    return home / "config.json"


def repo_config_path(project_root: Path) -> Path:
    return project_root / REPO_CONFIG_NAME


class RawLayers:
    """What the files and the environment hold, read once: the project's settings are resolved from it twice,
    first for the plugin choices alone (which plugins load), then against the loaded plugins' models."""

    def __init__(self, user: ConfigLayer | None, repo: ConfigLayer | None, environ: dict[str, str],
                 warnings: list[str]) -> None:
        self.user = user
        self.repo = repo
        self.environ = environ
        self.warnings = warnings  # a repository file that could not be read at all


def read_layers(home: Path, project_root: Path | None, environ: dict[str, str] | None = None) -> RawLayers:
    """Read ``$MEMTREE_HOME/config.json`` and the repository's ``.memtree.json``.  Raise :class:`SettingsError`
    when the user's own file is unreadable; a repository's is ignored with a warning."""
    environ = dict(os.environ) if environ is None else environ
    user = _read_json(user_config_path(home))
    warnings: list[str] = []
    repo: ConfigLayer | None = None
    if project_root:
        try:
            repo = _read_json(repo_config_path(project_root))
        except SettingsError as exc:
            warnings.append(f"{exc}; the whole file is ignored")
    return RawLayers(user, repo, environ, warnings)


def _only(data: dict[str, Any], keys: tuple[str, ...] | None) -> dict[str, Any]:
    if keys is None:
        return dict(data)
    wanted = {_norm(k) for k in keys}
    return {k: v for k, v in data.items() if _norm(str(k)) in wanted}


def resolve(raw: RawLayers, model: type[Settings] = Settings, *, dormant: Dormant | None = None,
            only: tuple[str, ...] | None = None) -> LoadedSettings:
    """The settings ``model`` (the host's, or the host's with the loaded plugins' keys) takes from every
    layer.  Raise :class:`SettingsError` on a bad value in the user's own layers (config file, environment);
    drop what the repository may not set, or set badly, with a warning; drop a not-loaded plugin's keys
    (``dormant`` names it) with a warning.  ``only``: read these top-level keys alone, ignoring the others
    (the plugin choices, before the plugins that know the other keys are loaded)."""
    warnings = list(raw.warnings)
    user = ConfigLayer(raw.user.origin, _only(raw.user.data, only)) if raw.user else None
    repo = ConfigLayer(raw.repo.origin, _only(raw.repo.data, only)) if raw.repo else None
    environ = raw.environ
    if only is not None:
        wanted = {_norm(k) for k in only}
        environ = {k: v for k, v in environ.items()
                   if _norm(k[len("MEMTREE_"):].split("__")[0]) in wanted or k[len("MEMTREE_"):].upper() in NON_SETTING_ENV}
    env = _env_layer(environ, model, dormant, warnings)
    merged: dict[str, Any] = {}
    files: list[str] = []
    origins: dict[str, str] = {}
    plugin_config: list[PluginConfigLayer] = []
    for layer in (user, repo, env):
        if layer is None:
            continue
        config = _take_plugin_config(layer)
        if config is not None:
            plugin_config.append(PluginConfigLayer(layer.origin, config, repo=layer is repo,
                                                   origins=layer.plugin_origins))
        if dormant is not None and layer is not env:
            layer.data = _drop_dormant(layer.data, model, dormant, layer.origin, warnings)
        if layer is repo:
            data = _keep_user_plugin_choices(repo_layer(layer, warnings, model), user, layer.origin, warnings, model)
        else:
            _validate_layer(layer, model)
            data = layer.data
        merged = _merge(merged, data)
        for path, _names, _value in _leaves(data, model):
            origins[".".join(path)] = layer.env_origins.get(path, layer.origin)
        if layer is not env:
            files.append(layer.origin)
    own = _merge(user.data if user else {}, env.data)
    return LoadedSettings(model(**merged), files, warnings, origins, model(**own).plugins, plugin_config)


def host_settings(raw: RawLayers) -> LoadedSettings:
    """The host's keys alone, with the repository's limits, the plugins' keys left aside unchecked: what
    :func:`memtree_core.plugins.build` needs (the plugin set) before any plugin can say which keys it owns."""
    return resolve(raw, Settings, only=tuple(Settings.model_fields), dormant=lambda path: "a plugin")


def _drop_dormant(data: dict[str, Any], model: type[BaseModel], dormant: Dormant, origin: str,
                  warnings: list[str], prefix: tuple[str, ...] = ()) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in data.items():
        hit = _model_field(model, str(key))
        path = (*prefix, str(key))
        if hit is None:
            owner = dormant(path)
            if owner is not None:
                warnings.append(_dormant_warning(origin, ".".join(path), owner))
                continue
        elif hit[2] is not None and isinstance(value, dict):
            value = _drop_dormant(value, hit[2], dormant, origin, warnings, (*prefix, hit[1]))
        out[key] = value
    return out


# Built-in plugins a repository may not disable: redaction protects secrets; walkers enforce retention (the
# pruner) and the user's store size cap.
REPO_UNDISABLEABLE = ("redaction", "walkers")


def _marks(model: type[BaseModel], path: tuple[str, ...]) -> list[Any]:
    """The metadata of every field along ``path`` (camelCase keys), outermost first."""
    out: list[Any] = []
    node: Any = model
    for key in path:
        hit = _model_field(node, key) if node is not None else None
        if hit is None:
            break
        out.extend(node.model_fields[hit[0]].metadata)
        node = hit[2]
    return out


def _repo_may_set(model: type[BaseModel], path: tuple[str, ...]) -> bool:
    return any(m is REPO_SAFE for m in _marks(model, path))


def _repo_safe_inside(model: type[BaseModel], path: tuple[str, ...]) -> bool:
    """Whether some key under the section at ``path`` is repo-safe (a repository gave it a scalar)."""
    node: Any = model
    for key in path:
        hit = _model_field(node, key)
        if hit is None or hit[2] is None:
            return False
        node = hit[2]

    def walk(section: type[BaseModel]) -> bool:
        for info in section.model_fields.values():
            if any(m is REPO_SAFE for m in info.metadata):
                return True
            sub = info.annotation
            if isinstance(sub, type) and issubclass(sub, BaseModel) and walk(sub):
                return True
        return False

    return walk(node)


def _why_user_only(model: type[BaseModel], path: tuple[str, ...]) -> str:
    reasons = [m.reason for m in _marks(model, path) if isinstance(m, UserOnly)]
    if reasons:
        return reasons[-1]
    if path[0].lower().endswith("url"):
        return "it can send data off this machine or spend on a paid API"
    return SIZES


def _model_field(model: type[BaseModel], key: str) -> tuple[str, str, Any] | None:
    """(field name, camelCase alias, nested section model or None) for a key spelled as pydantic accepts it."""
    for name, info in model.model_fields.items():
        alias = info.alias or name
        if key in (name, alias):
            sub = info.annotation if isinstance(info.annotation, type) and issubclass(info.annotation,
                                                                                      BaseModel) else None
            return name, alias, sub
    return None


def _leaves(data: dict[str, Any], model: type[BaseModel], prefix: tuple[str, ...] = (),
            names: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], tuple[str, ...] | None, Any]]:
    """Every (alias path, field-name path or None when unknown, raw value) of a layer, keys canonicalised so
    ``ollama_url`` and ``ollamaUrl`` are the same key."""
    out: list[tuple[tuple[str, ...], tuple[str, ...] | None, Any]] = []
    for key, value in data.items():
        hit = _model_field(model, str(key))
        if hit is None:
            out.append(((*prefix, str(key)), None, value))
            continue
        name, alias, sub = hit
        if sub is not None and isinstance(value, dict):
            out.extend(_leaves(value, sub, (*prefix, alias), (*names, name)))
        else:
            out.append(((*prefix, alias), (*names, name), value))
    return out


def _nest(path: tuple[str, ...], value: Any) -> dict[str, Any]:
    out: dict[str, Any] = {path[-1]: value}
    for key in reversed(path[:-1]):
        out = {key: out}
    return out


def _parse_leaf(path: tuple[str, ...], names: tuple[str, ...], value: Any, model: type[BaseModel]) -> Any:
    """The value as the settings model parses it (bounds and all); raises ValidationError."""
    parsed: Any = model.model_validate(_nest(path, value))
    for name in names:
        parsed = getattr(parsed, name)
    return parsed.model_dump(by_alias=True) if isinstance(parsed, BaseModel) else parsed


def _keep_user_plugin_choices(repo: dict[str, Any], user: ConfigLayer | None, origin: str,
                              warnings: list[str], model: type[Settings]) -> dict[str, Any]:
    """A repository narrows the user's plugin choices, never widens them: what the user's config disables
    stays disabled, and with a user ``plugins.load`` the repository may only pick among those plugins."""
    plugins = repo.get("plugins")
    if not plugins or user is None:
        return repo
    mine = model.model_validate(user.data).plugins
    if "disable" in mine.model_fields_set and "disable" in plugins:
        plugins["disable"] = list(dict.fromkeys([*mine.disable, *plugins["disable"]]))
    if "load" in mine.model_fields_set and mine.load and "load" in plugins:
        extra = [p for p in plugins["load"] if p not in mine.load]
        if extra:
            warnings.append(f"{origin}: plugins.load of {', '.join(extra)} ignored; your own plugins.load "
                            f"does not name it")
        kept = [p for p in plugins["load"] if p in mine.load]
        if kept:
            plugins["load"] = kept
        else:  # an empty list means "every installed plugin": the user's own list stays instead
            del plugins["load"]
    return repo


MAX_REPO_WARNINGS = 40  # per file; the rest are counted, so a hostile file cannot flood memtree info


def repo_layer(layer: ConfigLayer, all_warnings: list[str], model: type[BaseModel] = Settings) -> dict[str, Any]:
    """The part of a repository's config it may set, parsed; a warning for each key dropped and why."""
    origin = layer.origin
    out: dict[str, Any] = {}
    warnings: list[str] = []
    for path, names, raw in _leaves(layer.data, model):
        key = ".".join(path)
        if names is None:  # only an unknown key can be long: the known ones are the model's own names
            warnings.append(f"{origin}: unknown key {_shown(key)} ignored")
            continue
        if not _repo_may_set(model, path):
            if _repo_safe_inside(model, path):  # a section, given as a scalar
                warnings.append(f"{origin}: {key} ignored: expected an object (got {_shown(raw)})")
                continue
            warnings.append(f"{origin}: {key} ignored: only your own config or MEMTREE_* environment may set "
                            f"it ({_why_user_only(model, path)})")
            continue
        try:
            value = _parse_leaf(path, names, raw, model)
        except ValidationError as exc:
            details = "; ".join(f"{_message(e)} (got {_shown(e.get('input'))})" for e in exc.errors())
            warnings.append(f"{origin}: {key} ignored: {details}")
            continue
        if path == ("plugins", "disable"):
            refused = sorted({p.strip().lower() for p in value} & set(REPO_UNDISABLEABLE))
            if refused:
                warnings.append(f"{origin}: plugins.disable of {', '.join(map(repr, refused))} ignored; only your "
                                f"own config or MEMTREE_DISABLE_PLUGINS can disable it")
            value = [p for p in value if p.strip().lower() not in REPO_UNDISABLEABLE]
        target = out
        for part in path[:-1]:
            target = target.setdefault(part, {})
        target[path[-1]] = value
    all_warnings.extend(warnings[:MAX_REPO_WARNINGS])
    if len(warnings) > MAX_REPO_WARNINGS:
        all_warnings.append(f"{origin}: {len(warnings) - MAX_REPO_WARNINGS:,} more keys ignored")
    return out
