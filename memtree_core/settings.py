"""Settings: the spec's ``config.json`` keys with its defaults, layered

    defaults < user config ($MEMTREE_HOME/config.json) < the repo's .memtree.json < MEMTREE_* environment

Keys are camelCase in files (as in the spec); environment variables use ``__`` between levels and ignore
case and underscores inside a key, so ``MEMTREE_CAPTURE__MAX_BYTES`` sets ``capture.maxBytes``.
Each layer is validated on its own, so an error names the file (or variable), the key and the type.

The repository's ``.memtree.json`` arrives with the code, so it is untrusted input: it may set only the keys
in :data:`REPO_ALLOWED` (its plugin set, budgets, search defaults and the like).  Whatever weakens a
protection, sends data off the machine or sizes resources and retention is the user's alone (their
``config.json`` or ``MEMTREE_*`` variables).  A repository's other keys, and its bad or out-of-bound values,
are dropped with a warning (``memtree info`` lists them), never an error: a cloned repository cannot stop
memtree from working.  Every check is made on the parsed value, never on the raw JSON.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, field_validator
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


class _Section(BaseModel):
    # NaN and infinity pass no bound check (NaN >= 0 is false, yet not an error): refuse them outright.
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid", allow_inf_nan=False)


class Retention(_Section):
    stale_hours: float = Field(24, ge=0)
    superseded_days: float = Field(7, ge=0)
    # pruned rows are kept for audit this long, then deleted.
    pruned_days: float = Field(30, ge=0)
    # 0 = no cap; above it the pruner evicts the oldest non-live rows, then the oldest live tool outputs.
    max_store_mb: float = Field(0, ge=0)

    @field_validator("max_store_mb")
    @classmethod
    def _no_tiny_cap(cls, value: float) -> float:
        # A cap under 1 MB would evict every stored output on each pruner run.
        if 0 < value < 1:
            raise ValueError("must be 0 (no cap) or at least 1 (MB)")
        return value


class Walkers(_Section):
    embedding_idle_ms: int = Field(5000, ge=0)
    embedding_batch_size: int = Field(32, ge=1, le=1024)
    summarizer_subtree_threshold: int = Field(25, ge=1)
    dedupe_interval_ms: int = Field(60000, ge=MIN_INTERVAL_MS)
    staleness_interval_ms: int = Field(30000, ge=MIN_INTERVAL_MS)
    pruner_interval_ms: int = Field(300000, ge=MIN_INTERVAL_MS)
    filter_interval_ms: int = Field(250, ge=MIN_INTERVAL_MS)
    # files re-stat'ed per staleness tick, so one tick stays short on a huge store.
    staleness_batch_files: int = Field(5000, ge=1, le=1_000_000)
    prune_batch_rows: int = Field(2000, ge=1, le=1_000_000)


class IndexSettings(_Section):
    # Keep the project indexed from the daemon (``memtree index``'s incremental pass, ``maxFilesPerRun``
    # files written per tick).  Off by default and the user's alone: a cloned repository must not make the
    # daemon read and store every file it holds.
    background: bool = False
    interval_ms: int = Field(60000, ge=MIN_INTERVAL_MS)
    max_files_per_run: int = Field(200, ge=1, le=100_000)
    max_bytes: int = Field(1024 * 1024, ge=1, le=20 * 1024 * 1024)


class ReplaceThresholds(_Section):
    bash: int = Field(2000, ge=0, alias="Bash")
    grep: int = Field(2000, ge=0, alias="Grep")
    # accepted but never applied: Read output is not replaced (README: an Edit needs what the model read).
    read: int = Field(0, ge=0, alias="Read")


class Replace(_Section):
    enabled: Flag = False
    thresholds: ReplaceThresholds = ReplaceThresholds()
    budget_tokens: int = Field(800, ge=50)
    timeout_ms: int = Field(150, ge=10)


class Capture(_Section):
    # one capture is held in memory whole (and redacted as one string): keep it bounded.
    max_bytes: int = Field(100000, ge=1, le=32 * MIB)
    filter_min_size: int = Field(50, ge=0, le=100_000)
    bash: Flag = True
    replace: Replace = Replace()


class Redaction(_Section):
    enabled: Flag = True


class Daemon(_Section):
    # the daemon exits after this many seconds with no MCP session and no capture.
    idle_timeout_s: float = Field(1800, ge=1, le=7 * 86400)


class StoreSettings(_Section):
    # SQLite's synchronous mode.  "normal": a commit survives the daemon's crash or SIGKILL; an OS crash or
    # power loss can lose the last commits (never corrupt the store).  "full": those survive too, at the cost
    # of an fsync per commit.  User-only: a repository's config cannot change it.
    synchronous: Literal["normal", "full"] = "normal"


class Summarizer(_Section):
    daily_cap: int = Field(200, ge=0)
    requests_per_minute: int = Field(20, ge=1)


class Search(_Section):
    ranker: str = "shaped"  # fusion by query shape (memtree_plugins/retrieval/fusion.py)
    default_limit: int = Field(10, ge=1, le=200)


MAX_BUDGET = 200_000  # tokens; more than any context window holds
# tokens; below this a tool's own header may not fit, and every call would fail (a repository sets budgets)
MIN_BUDGET = 200


class Budgets(_Section):
    read: int = Field(2000, ge=MIN_BUDGET, le=MAX_BUDGET)
    bash: int = Field(1000, ge=MIN_BUDGET, le=MAX_BUDGET)
    grep: int = Field(1000, ge=MIN_BUDGET, le=MAX_BUDGET)
    get: int = Field(2000, ge=MIN_BUDGET, le=MAX_BUDGET)


class PluginSet(_Section):
    load: list[str] = []
    disable: list[str] = []
    require: dict[str, str] = {}  # distribution or plugin name -> version specifier


class Settings(BaseSettings):
    """Every key of the spec's config.json, with the spec's defaults, plus memtree's additions."""

    model_config = SettingsConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid",
                                      allow_inf_nan=False)

    embedding_model: str = "nomic-embed-text"
    summarizer_model: str = "claude-haiku-4-5"
    ollama_url: str = "http://127.0.0.1:11434"
    retention: Retention = Retention()
    walkers: Walkers = Walkers()
    index: IndexSettings = IndexSettings()
    capture: Capture = Capture()
    redaction: Redaction = Redaction()
    daemon: Daemon = Daemon()
    store: StoreSettings = StoreSettings()
    summarizer: Summarizer = Summarizer()
    search: Search = Search()
    budgets: Budgets = Budgets()
    plugins: PluginSet = PluginSet()

    @field_validator("ollama_url")
    @classmethod
    def _http_url(cls, value: str) -> str:
        # The embedder POSTs file text there: it must be a plain http(s) endpoint, not file:// or a typo.
        from urllib.parse import urlsplit

        try:
            parts = urlsplit(value)
            _ = parts.port  # a port that is not a number raises here
            ok = parts.scheme in ("http", "https") and bool(parts.hostname)
        except ValueError:
            ok = False
        if not ok:
            raise ValueError("must be an http:// or https:// URL with a host, e.g. http://127.0.0.1:11434")
        return value

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


def _message(err: dict[str, Any]) -> str:
    # pydantic prefixes a validator's own message with "Value error, "; the message alone reads better.
    return err["msg"].removeprefix("Value error, ").lower()


def _validate_layer(layer: ConfigLayer) -> None:
    try:
        Settings.model_validate(layer.data)
    except ValidationError as exc:
        details = "; ".join(_describe(e, Settings) for e in exc.errors())
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


def _env_layer(environ: dict[str, str]) -> ConfigLayer:
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
            value: Any = raw
            if raw[:1] != "" and raw[:1] in "[{":
                try:
                    value = json.loads(raw)
                except json.JSONDecodeError:
                    raise SettingsError(f"environment variable {var}: expected JSON") from None
            data.setdefault("plugins", {}).setdefault("config", {}).setdefault(plugin, {})[key] = value
            plugin_origins[(plugin, key)] = f"environment variable {var}"
            origins.append(var)
            continue
        model: Any = Settings
        target = data
        parts = [p for p in rest.split("__") if p]
        path_ok = bool(parts)
        for i, part in enumerate(parts):
            tree = _field_tree(model)
            hit = tree.get(_norm(part))
            if hit is None:
                raise SettingsError(f"environment variable {var}: no settings key {part!r} "
                                    f"(known: {', '.join(sorted({a for a, _ in tree.values()}))})")
            alias, sub = hit
            if i == len(parts) - 1:
                value = raw
                if sub is not None or (raw[:1] != "" and raw[:1] in "[{"):
                    try:
                        value = json.loads(raw)
                    except json.JSONDecodeError:
                        raise SettingsError(f"environment variable {var}: expected JSON") from None
                target[alias] = value
            else:
                if sub is None:
                    path_ok = False
                    break
                target = target.setdefault(alias, {})
                model = sub
        if path_ok:
            origins.append(var)
            by_key[tuple(_field_tree_alias_path(parts))] = f"environment variable {var}"
    layer = ConfigLayer("environment (" + ", ".join(origins) + ")" if origins else "environment", data, by_key)
    layer.plugin_origins = plugin_origins
    return layer


def _field_tree_alias_path(parts: list[str]) -> list[str]:
    """The camelCase key path an environment variable's ``__``-separated parts name."""
    model: Any = Settings
    out: list[str] = []
    for part in parts:
        alias, model = _field_tree(model)[_norm(part)]
        out.append(alias)
        if model is None:
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


def load_settings(home: Path, project_root: Path | None, environ: dict[str, str] | None = None) -> LoadedSettings:
    """Build the project's settings from every layer.

    Raise :class:`SettingsError` on a bad value in the user's own layers (config file, environment); drop what
    the repository may not set, or set badly, with a warning."""
    environ = dict(os.environ) if environ is None else environ
    user = _read_json(user_config_path(home))
    warnings: list[str] = []
    repo: ConfigLayer | None = None
    if project_root:
        try:
            repo = _read_json(repo_config_path(project_root))
        except SettingsError as exc:
            warnings.append(f"{exc}; the whole file is ignored")
    env = _env_layer(environ)
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
        if layer is repo:
            data = _keep_user_plugin_choices(repo_layer(layer, warnings), user, layer.origin, warnings)
        else:
            _validate_layer(layer)
            data = layer.data
        merged = _merge(merged, data)
        for path, _names, _value in _leaves(data, Settings):
            origins[".".join(path)] = layer.env_origins.get(path, layer.origin)
        if layer is not env:
            files.append(layer.origin)
    own = _merge(user.data if user else {}, env.data)
    return LoadedSettings(Settings(**merged), files, warnings, origins, Settings(**own).plugins, plugin_config)


# What a repository's .memtree.json may set, as paths of camelCase keys; a path covers everything under it.
# Nothing here can weaken a protection, send data anywhere, or size memory, disk or CPU use.
REPO_ALLOWED: tuple[tuple[str, ...], ...] = (
    ("embeddingModel",),  # which registered embedder; the destinations themselves stay the user's
    ("plugins", "load"), ("plugins", "disable"), ("plugins", "require"),
    ("budgets",),
    ("search", "ranker"), ("search", "defaultLimit"),
    ("capture", "filterMinSize"),
)
# Built-in plugins a repository may not disable: redaction protects secrets; walkers enforce retention (the
# pruner) and the user's store size cap.
REPO_UNDISABLEABLE = ("redaction", "walkers")


def _why_user_only(path: tuple[str, ...]) -> str:
    top = path[0]
    if top in ("redaction",) or path[:2] == ("capture", "bash") or path[:2] == ("capture", "replace"):
        return "it decides what is captured or redacted"
    if top in ("ollamaUrl", "summarizerModel", "summarizer") or top.lower().endswith("url"):
        return "it can send data off this machine or spend on a paid API"
    if top == "store":
        return "it decides how durable your captures are"
    if top == "index":
        return "it makes the daemon read and store every file of the project"
    return "it sizes memory, disk, CPU or retention"


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


def _parse_leaf(path: tuple[str, ...], names: tuple[str, ...], value: Any) -> Any:
    """The value as the settings model parses it (bounds and all); raises ValidationError."""
    parsed: Any = Settings.model_validate(_nest(path, value))
    for name in names:
        parsed = getattr(parsed, name)
    return parsed.model_dump(by_alias=True) if isinstance(parsed, BaseModel) else parsed


def _keep_user_plugin_choices(repo: dict[str, Any], user: ConfigLayer | None, origin: str,
                              warnings: list[str]) -> dict[str, Any]:
    """A repository narrows the user's plugin choices, never widens them: what the user's config disables
    stays disabled, and with a user ``plugins.load`` the repository may only pick among those plugins."""
    plugins = repo.get("plugins")
    if not plugins or user is None:
        return repo
    mine = Settings.model_validate(user.data).plugins
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


def repo_layer(layer: ConfigLayer, all_warnings: list[str]) -> dict[str, Any]:
    """The part of a repository's config it may set, parsed; a warning for each key dropped and why."""
    origin = layer.origin
    out: dict[str, Any] = {}
    warnings: list[str] = []
    for path, names, raw in _leaves(layer.data, Settings):
        key = ".".join(path)
        if names is None:  # only an unknown key can be long: the known ones are the model's own names
            warnings.append(f"{origin}: unknown key {_shown(key)} ignored")
            continue
        if not any(path[:len(allowed)] == allowed for allowed in REPO_ALLOWED):
            if any(allowed[:len(path)] == path for allowed in REPO_ALLOWED):  # a section, given as a scalar
                warnings.append(f"{origin}: {key} ignored: expected an object (got {_shown(raw)})")
                continue
            warnings.append(f"{origin}: {key} ignored: only your own config or MEMTREE_* environment may set "
                            f"it ({_why_user_only(path)})")
            continue
        try:
            value = _parse_leaf(path, names, raw)
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
