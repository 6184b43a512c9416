"""Settings: the spec's ``config.json`` keys with its defaults, layered

    defaults < user config ($MEMTREE_HOME/config.json) < the repo's .memtree.json < MEMTREE_* environment

Keys are camelCase in files (as in the spec); environment variables use ``__`` between levels and ignore
case and underscores inside a key, so ``MEMTREE_CAPTURE__MAX_BYTES`` sets ``capture.maxBytes``.
Each layer is validated on its own, so an error names the file (or variable), the key and the type.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic.alias_generators import to_camel
from pydantic_settings import BaseSettings, SettingsConfigDict

REPO_CONFIG_NAME = ".memtree.json"
# MEMTREE_* variables that are not settings keys (read directly where they matter).
NON_SETTING_ENV = {"HOME", "SQLITE", "LOAD_PLUGINS", "DISABLE_PLUGINS", "STRICT_PLUGINS", "TRACE_PLUGINS", "DEBUG", "HOOK_SENDER",
                   "GREP_ENGINE",  # grep: force ripgrep or the Python fallback (memtree_plugins.wrappers)
                   "DAEMON_EXEC"}  # start the daemon as a new interpreter, not a fork (memtree_core.daemon.control)


class SettingsError(Exception):
    """A config file or variable holds a bad value; the message names where, which key and what type."""


class _Section(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")


class Retention(_Section):
    stale_hours: float = Field(24, ge=0)
    superseded_days: float = Field(7, ge=0)
    # pruned rows are kept for audit this long, then deleted.
    pruned_days: float = Field(30, ge=0)
    # 0 = no cap; above it the pruner evicts the oldest non-live rows, then the oldest live tool outputs.
    max_store_mb: float = Field(0, ge=0)


class Walkers(_Section):
    embedding_idle_ms: int = Field(5000, ge=0)
    embedding_batch_size: int = Field(32, ge=1)
    summarizer_subtree_threshold: int = Field(25, ge=1)
    dedupe_interval_ms: int = Field(60000, ge=0)
    staleness_interval_ms: int = Field(30000, ge=0)
    pruner_interval_ms: int = Field(300000, ge=0)
    filter_interval_ms: int = Field(250, ge=0)
    # files re-stat'ed per staleness tick, so one tick stays short on a huge store.
    staleness_batch_files: int = Field(5000, ge=1)
    prune_batch_rows: int = Field(2000, ge=1)


class ReplaceThresholds(_Section):
    bash: int = Field(2000, ge=0, alias="Bash")
    grep: int = Field(2000, ge=0, alias="Grep")
    # accepted but never applied: Read output is not replaced (README: an Edit needs what the model read).
    read: int = Field(0, ge=0, alias="Read")


class Replace(_Section):
    enabled: bool = False
    thresholds: ReplaceThresholds = ReplaceThresholds()
    budget_tokens: int = Field(800, ge=50)
    timeout_ms: int = Field(150, ge=10)


class Capture(_Section):
    max_bytes: int = Field(100000, ge=1)
    filter_min_size: int = Field(50, ge=0)
    bash: bool = True
    replace: Replace = Replace()


class Redaction(_Section):
    enabled: bool = True


class Daemon(_Section):
    # the daemon exits after this many seconds with no MCP session and no capture.
    idle_timeout_s: float = Field(1800, ge=1)


class StoreSettings(_Section):
    # SQLite's synchronous mode.  "normal": a commit survives the daemon's crash or SIGKILL; an OS crash or
    # power loss can lose the last commits (never corrupt the store).  "full": those survive too, at the cost
    # of an fsync per commit.  User-only: a repository's config cannot change it.
    synchronous: Literal["normal", "full"] = "normal"


class Summarizer(_Section):
    daily_cap: int = Field(200, ge=0)
    requests_per_minute: int = Field(20, ge=1)


class Search(_Section):
    ranker: str = "rrf"
    default_limit: int = Field(10, ge=1, le=200)


class Budgets(_Section):
    read: int = Field(2000, ge=1)
    bash: int = Field(1000, ge=1)
    grep: int = Field(1000, ge=1)
    get: int = Field(2000, ge=1)


class PluginSet(_Section):
    load: list[str] = []
    disable: list[str] = []
    require: dict[str, str] = {}  # distribution or plugin name -> version specifier


class Settings(BaseSettings):
    """Every key of the spec's config.json, with the spec's defaults, plus memtree's additions."""

    model_config = SettingsConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")

    embedding_model: str = "nomic-embed-text"
    summarizer_model: str = "claude-haiku-4-5"
    ollama_url: str = "http://127.0.0.1:11434"
    retention: Retention = Retention()
    walkers: Walkers = Walkers()
    capture: Capture = Capture()
    redaction: Redaction = Redaction()
    daemon: Daemon = Daemon()
    store: StoreSettings = StoreSettings()
    summarizer: Summarizer = Summarizer()
    search: Search = Search()
    budgets: Budgets = Budgets()
    plugins: PluginSet = PluginSet()

    @classmethod
    def settings_customise_sources(cls, settings_cls, init_settings, env_settings, dotenv_settings,
                                   file_secret_settings):  # type: ignore[override]
        # Layers are merged by load_settings(); the result arrives as init kwargs.
        return (init_settings,)


class ConfigLayer:
    """One layer's raw values and where they came from."""

    def __init__(self, origin: str, data: dict[str, Any]) -> None:
        self.origin = origin
        self.data = data


def _describe(err: dict[str, Any], model: type[BaseModel]) -> str:
    loc = ".".join(str(p) for p in err["loc"])
    if err["type"] == "extra_forbidden":
        return f"unknown key {loc!r}"
    return f"{loc}: {err['msg'].lower()} (got {err.get('input')!r})"


def _validate_layer(layer: ConfigLayer) -> None:
    try:
        Settings.model_validate(layer.data)
    except ValidationError as exc:
        details = "; ".join(_describe(e, Settings) for e in exc.errors())
        raise SettingsError(f"{layer.origin}: {details}") from None


def _read_json(path: Path) -> ConfigLayer | None:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise SettingsError(f"{path}: cannot read it: {exc}") from None
    try:
        data = json.loads(text) if text.strip() else {}
    except json.JSONDecodeError as exc:
        raise SettingsError(f"{path}: not valid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from None
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
    for var, raw in environ.items():
        if not var.upper().startswith("MEMTREE_"):
            continue
        rest = var[len("MEMTREE_"):]
        if rest.upper() in NON_SETTING_ENV:
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
                value: Any = raw
                if sub is not None or raw[:1] in "[{":
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
    return ConfigLayer("environment (" + ", ".join(origins) + ")" if origins else "environment", data)


def _merge(base: dict[str, Any], top: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in top.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out


def _get(data: dict[str, Any], *path: str) -> Any:
    for key in path:
        if not isinstance(data, dict) or key not in data:
            return None
        data = data[key]
    return data


class LoadedSettings:
    """The merged settings plus what went into them (for ``memtree info``)."""

    def __init__(self, settings: Settings, files: list[str], warnings: list[str]) -> None:
        self.settings = settings
        self.files = files
        self.warnings = warnings


def user_config_path(home: Path) -> Path:
    return home / "config.json"


def repo_config_path(project_root: Path) -> Path:
    return project_root / REPO_CONFIG_NAME


def load_settings(home: Path, project_root: Path | None, environ: dict[str, str] | None = None) -> LoadedSettings:
    """Build the project's settings from every layer; raise :class:`SettingsError` on a bad value."""
    environ = dict(os.environ) if environ is None else environ
    user = _read_json(user_config_path(home))
    repo = _read_json(repo_config_path(project_root)) if project_root else None
    env = _env_layer(environ)
    warnings: list[str] = []
    merged: dict[str, Any] = {}
    files: list[str] = []
    for layer in (user, repo, env):
        if layer is None:
            continue
        _validate_layer(layer)
        data = layer.data
        if layer is repo:
            data = _restrict_repo_layer(data, user.data if user else {}, layer.origin, warnings)
        merged = _merge(merged, data)
        if layer is not env:
            files.append(layer.origin)
    return LoadedSettings(Settings(**merged), files, warnings)


def _restrict_repo_layer(repo: dict[str, Any], user: dict[str, Any], origin: str,
                         warnings: list[str]) -> dict[str, Any]:
    """A repository must not weaken what protects the user's secrets."""
    repo = json.loads(json.dumps(repo))
    if _get(repo, "redaction", "enabled") is False:
        del repo["redaction"]["enabled"]
        warnings.append(f"{origin}: redaction.enabled=false ignored; only your own config can turn redaction off")
    if _get(repo, "capture", "bash") is True and _get(user, "capture", "bash") is False:
        del repo["capture"]["bash"]
        warnings.append(f"{origin}: capture.bash=true ignored; your own config disabled Bash capture")
    if isinstance(repo.get("store"), dict) and "synchronous" in repo["store"]:
        del repo["store"]["synchronous"]
        warnings.append(f"{origin}: store.synchronous ignored; durability is set in your own config")
    disabled = _get(repo, "plugins", "disable") or []
    if "redaction" in disabled:
        repo["plugins"]["disable"] = [p for p in disabled if p != "redaction"]
        warnings.append(f"{origin}: plugins.disable of 'redaction' ignored; only your own config can do that")
    return repo
