"""Settings: the host's keys of ``config.json`` and the layering, on pydantic-settings' own sources
(:meth:`Settings.settings_customise_sources`), weakest first:

    defaults < user config ($MEMTREE_HOME/config.json) < the repo's .memtree.json < MEMTREE_* environment < init

Keys are camelCase in files; the environment is pydantic-settings' ``EnvSettingsSource`` (prefix ``MEMTREE_``,
``__`` between levels: ``MEMTREE_CAPTURE__MAX_BYTES`` sets ``capture.maxBytes``), each variable's name checked
against the model first (any case, underscores inside a key optional), so a typo is an error.  Each source
validates what it gives, so an error names the file (or variable), the key and the type.

:class:`Settings` holds the host's own keys (capture's size cap and Bash switch, redaction, the daemon, the
store, the plugin set); every other key is a plugin's (:mod:`memtree_core.plugin_settings`), composed with
these once the plugins are loaded (:mod:`memtree_core.project_settings`), under the same sources and rules.

The repository's ``.memtree.json`` arrives with the code, so it is untrusted: it may set only the fields marked
:data:`REPO_SAFE`; what weakens a protection, sends data off the machine or sizes resources and retention is
the user's alone (:class:`UserOnly` says why).  Its other keys, and its bad or out-of-bound values, are dropped
with a warning (``memtree info`` lists them), never an error; every check is made on the parsed value.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass, field
from functools import reduce
from pathlib import Path
from typing import Annotated, Any, Literal, NamedTuple

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError
from pydantic.alias_generators import to_camel
from pydantic_settings import BaseSettings, EnvSettingsSource, PydanticBaseSettingsSource, SettingsConfigDict

REPO_CONFIG_NAME = ".memtree.json"
# MEMTREE_* variables that are not settings keys (read directly where they matter).
NON_SETTING_ENV = {"HOME", "SQLITE", "LOAD_PLUGINS", "DISABLE_PLUGINS", "STRICT_PLUGINS", "TRACE_PLUGINS", "DEBUG", "HOOK_SENDER",
                   "GREP_ENGINE",  # grep: force ripgrep or the Python fallback (memtree_plugins.wrappers)
                   "DAEMON_EXEC",  # start the daemon as a new interpreter, not a fork (memtree_core.daemon.control)
                   "STORE_URL"}  # store.url, which it overrides (memtree_core/store/postgres/url.py)


class SettingsError(Exception):
    """A config file or variable holds a bad value; the message names where, which key and what type."""


def _strict_flag(value: Any) -> bool:
    """A boolean setting takes a real boolean or the strings "true"/"false"/"1"/"0" (env variables are
    strings), nothing else: "off", "no", 0.0 or a number are mistakes, not a quiet ``False``."""
    if isinstance(value, bool):
        return value
    word = value.strip().lower() if isinstance(value, str) else None
    if word in ("true", "1", "false", "0"):
        return word in ("true", "1")
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
    # SQLite's synchronous mode: "normal": a commit survives a crash or SIGKILL of the daemon; "full": also an
    synchronous: Literal["normal", "full"] = "normal"  # OS crash or power loss (an fsync per commit)
    url: str = ""  # empty: the local SQLite file; postgresql://... a server (store/postgres/url.py)


class PluginSet(Section):
    # A repository chooses its plugin set (narrowing the user's, never widening it: _keep_user_plugin_choices).
    load: Annotated[list[str], REPO_SAFE] = []
    disable: Annotated[list[str], REPO_SAFE] = []
    require: Annotated[dict[str, str], REPO_SAFE] = {}  # distribution or plugin name -> version specifier
    # ``config``: each plugin's own settings (plugins.config.<name>), added with the plugins' models


class Settings(BaseSettings):
    """The host's own keys of config.json; each built-in plugin adds the top-level keys it owns
    (:func:`memtree_core.plugin_settings.compose`), so a project's settings model is this one plus theirs."""

    model_config = SettingsConfigDict(**Section.model_config, env_prefix="MEMTREE_", env_nested_delimiter="__")

    capture: Capture = Capture()
    redaction: Annotated[Redaction, UserOnly(WHAT_IS_CAPTURED)] = Redaction()
    daemon: Daemon = Daemon()
    store: Annotated[StoreSettings, UserOnly("it decides where and how durably your captures are kept")] = StoreSettings()
    plugins: PluginSet = PluginSet()

    @classmethod
    def settings_customise_sources(cls, settings_cls, init_settings, env_settings, dotenv_settings,
                                   file_secret_settings):  # type: ignore[override]
        # The files and environment take part only in a load (resolve()); a bare Settings() is the defaults.
        job = _JOB.get()
        if job is None:
            return (init_settings,)
        return (init_settings, _Environment(settings_cls, job), _File(settings_cls, job, "repo"),
                _File(settings_cls, job, "user"))


class _Load:
    """One load in progress: what the sources read and report (a Settings() outside a load reads nothing)."""

    def __init__(self, raw: RawLayers, dormant: Dormant | None) -> None:
        self.raw, self.dormant = raw, dormant
        self.warnings = list(raw.warnings)
        self.origins: dict[str, dict[str, str]] = {}  # source -> dotted key -> where it was set
        self.data: dict[str, dict[str, Any]] = {}  # source -> the values it gave
        self.refused: dict[str, list[str]] = {}  # plugin -> what the repository may not set in its plugins.config


_JOB: ContextVar[_Load | None] = ContextVar("memtree_settings_load", default=None)


class _File(PydanticBaseSettingsSource):
    """A config file as a source: the user's (a bad value is an error naming the file and the key) or the
    repository's (untrusted: only what it may set, the rest dropped with a warning)."""

    def __init__(self, settings_cls: type[BaseSettings], job: _Load, name: str) -> None:
        super().__init__(settings_cls)
        self.job, self.name = job, name

    def get_field_value(self, field: Any, field_name: str) -> tuple[Any, str, bool]:  # unused: read whole
        return None, field_name, False

    def __call__(self) -> dict[str, Any]:
        job, model = self.job, self.settings_cls
        layer = job.raw.user if self.name == "user" else job.raw.repo
        if self.name in job.data or layer is None:  # the repository's source asked for the user's already
            return job.data.get(self.name, {})
        data = _drop_dormant(layer.data, model, job, layer.origin)
        if self.name == "user":
            _check(data, model, lambda err: layer.origin)
        else:
            _File(model, job, "user")()  # what the user chose, which the repository only narrows
            data = _keep_user_plugin_choices(repo_layer(layer.origin, data, job, model), job, layer.origin, model)
        job.data[self.name] = data
        job.origins[self.name] = {".".join(path): layer.origin for path, _names, _value in _leaves(data, model)}
        return data


class _Environment(EnvSettingsSource):
    """pydantic-settings' environment source over the load's ``environ``; each variable's name is checked
    against the model first (an unknown key is an error, a not-loaded plugin's a warning), its values after,
    and each error names its variable."""

    name = "env"

    def __init__(self, settings_cls: type[BaseSettings], job: _Load) -> None:
        self.job = job
        super().__init__(settings_cls)

    def _load_env_vars(self) -> dict[str, str]:
        self.written: dict[str, str] = {}  # the name pydantic-settings looks up -> the variable as written
        for var in self.job.raw.environ:
            name = self._wanted(var, self.job.raw.environ[var])
            if name:
                self.written[name] = var
        return {name: self.job.raw.environ[var] for name, var in self.written.items()}

    def _wanted(self, var: str, raw: str) -> str | None:
        """The variable's name as the model spells it (any case, with or without underscores inside a key),
        or None when it sets no key of this model."""
        if not var.upper().startswith("MEMTREE_"):
            return None
        parts = [p for p in var[len("MEMTREE_"):].split("__") if p]
        if not parts or parts[0].upper() in NON_SETTING_ENV:
            return None
        if raw[:1] in ("[", "{"):
            _env_json(var, raw)
        if [_norm(p) for p in parts[:2]] == ["plugins", "config"] and len(parts) < 4:
            raise SettingsError(f"environment variable {var}: name a plugin and one of its keys, "
                                f"MEMTREE_PLUGINS__CONFIG__<PLUGIN>__<KEY> (see memtree plugins --json)")
        node: Any = self.settings_cls
        names: list[str] = []
        for i, part in enumerate(parts):
            hit = _model_field(node, part, loose=True)
            if hit is None:
                reason = self.job.dormant(tuple(parts[:i + 1])) if self.job.dormant else None
                if reason is not None:
                    if reason:
                        self.job.warnings.append(f"environment variable {var}: {_plain('.'.join(parts))} ignored: "
                                                 f"{reason}")
                    return None
                known = ", ".join(sorted(info.alias or name for name, info in node.model_fields.items()))
                raise SettingsError(f"environment variable {var}: no settings key {part!r} (known: {known})")
            if hit[2] is None and i < len(parts) - 1:
                return None
            if i == len(parts) - 1 and (hit[2] is not None or self._field_is_complex(node.model_fields[hit[0]])[0]):
                _env_json(var, raw)  # a whole section, a list or a mapping is JSON
            node = hit[2]
            names.append(hit[1] if i else hit[0])  # a top-level key by its field name, a nested one by its alias
        return "memtree_" + "__".join(names).lower()

    def __call__(self) -> dict[str, Any]:
        data = _canonical(super().__call__(), self.settings_cls)
        names = {_norm(name): var for name, var in self.written.items()}
        self.job.data[self.name] = data

        def origin(path: tuple[str, ...]) -> str:
            for n in range(len(path), 0, -1):
                var = names.get(_norm("memtree_" + "__".join(path[:n])))
                if var is not None:
                    return f"environment variable {var}"
            return "environment"

        _check(data, self.settings_cls, lambda err: origin(tuple(str(p) for p in err["loc"])))
        self.job.origins[self.name] = {".".join(p): origin(p) for p, _n, _v in _leaves(data, self.settings_cls)}
        return data


def _canonical(data: dict[str, Any], model: Any) -> dict[str, Any]:
    """``data`` with every known key spelled as its camelCase alias (an unknown one left as it is)."""
    out: dict[str, Any] = {}
    for key, value in data.items():
        hit = _model_field(model, str(key), loose=True) if model is not None else None
        if hit is None:
            out[key] = value
        else:
            out[hit[1]] = _canonical(value, hit[2]) if hit[2] is not None and isinstance(value, dict) else value
    return out


def _validate(model: type[BaseModel], data: dict[str, Any]) -> Any:
    """``model`` made from ``data`` alone (no source is read while the sources check their values)."""
    token = _JOB.set(None)
    try:
        return model.model_validate(data)
    finally:
        _JOB.reset(token)


def _check(data: dict[str, Any], model: type[BaseModel], origin: Callable[[dict[str, Any]], str]) -> None:
    """Raise :class:`SettingsError` naming where, which key and why, when a user's layer holds a bad value."""
    try:
        _validate(model, data)
    except ValidationError as exc:
        raise SettingsError("; ".join(f"{origin(e)}: {_describe(e, model)}" for e in exc.errors())) from None


def _describe(err: dict[str, Any], model: type[BaseModel]) -> str:
    path = tuple(str(p) for p in err["loc"])
    if err["type"] == "extra_forbidden":
        return _unknown(path, model)
    return f"{'.'.join(path)}: {_message(err)} (got {_shown(err.get('input'))})"


def _unknown(path: tuple[str, ...], model: type[BaseModel]) -> str:
    """What to say of an unknown key: a plugin's names its settings."""
    if len(path) > 3 and path[:2] == ("plugins", "config"):
        own = _along(model, path[:3])[1]
        keys = ", ".join(info.alias or name for name, info in own.model_fields.items()) if own else "none"
        return f"plugins.config.{path[2]}: unknown key {_shown(path[3])} ({path[2]}'s settings: {keys})"
    return f"unknown key {_shown('.'.join(path))}"


def _along(model: Any, path: tuple[str, ...]) -> tuple[list[Any], Any]:
    """The metadata of every field along ``path`` (camelCase keys), outermost first, and the section model at
    its end (None when the path ends on a plain key or leaves the model)."""
    marks: list[Any] = []
    for key in path:
        hit = _model_field(model, key) if model is not None else None
        if hit is None:
            return marks, None
        marks.extend(model.model_fields[hit[0]].metadata)
        model = hit[2]
    return marks, model


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


MAX_CONFIG_BYTES = 1024 * 1024  # a config file is a few hundred bytes; more is a mistake or an attack


def _read_text(path: Path, link_ok: bool = True) -> str | None:
    """The file's text, or None when there is none; only a regular file of at most MAX_CONFIG_BYTES is read,
    so a FIFO, a device, a huge file or (not ``link_ok``) a link out of a cloned repository can neither hang
    memtree, fill its memory nor be read."""
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | (0 if link_ok else os.O_NOFOLLOW)
    try:
        with os.fdopen(os.open(path, flags), "rb") as f:
            info = os.fstat(f.fileno())
            if not stat.S_ISREG(info.st_mode):
                raise SettingsError(f"{path}: not a regular file")
            if info.st_size > MAX_CONFIG_BYTES:
                raise SettingsError(f"{path}: {info.st_size:,} bytes; a config file may hold at most "
                                    f"{MAX_CONFIG_BYTES:,}")
            raw = f.read(MAX_CONFIG_BYTES + 1)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if not link_ok and os.path.islink(path):
            raise SettingsError(f"{path}: a symbolic link, never followed (make it a plain file)") from None
        raise SettingsError(f"{path}: cannot read it: {exc.strerror or exc}") from None
    if len(raw) > MAX_CONFIG_BYTES:
        raise SettingsError(f"{path}: more than {MAX_CONFIG_BYTES:,} bytes; a config file may not be that big")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SettingsError(f"{path}: not UTF-8 text (byte {exc.start})") from None


class ConfigFile(NamedTuple):
    origin: str  # its path
    data: dict[str, Any]  # its values as written


def _read_json(path: Path, link_ok: bool = True) -> ConfigFile | None:
    text = _read_text(path, link_ok)
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
    return ConfigFile(str(path), data)


def _norm(key: str) -> str:
    return key.replace("_", "").replace("-", "").lower()


# Why a key no loaded model knows is not an error (the path as written): "" to drop it silently, a reason to
# drop it with a warning (a not-loaded plugin's key), None when it is a plain mistake.
Dormant = Callable[[tuple[str, ...]], "str | None"]


def _env_json(var: str, raw: str) -> Any:
    try:
        return json.loads(raw)
    except json.JSONDecodeError:
        raise SettingsError(f"environment variable {var}: expected JSON") from None


def _merge(base: dict[str, Any], top: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in top.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out


@dataclass
class LoadedSettings:
    """The merged settings plus what went into them (for ``memtree info`` and ``memtree plugins``)."""

    settings: Settings
    files: list[str]
    warnings: list[str]
    origins: dict[str, str] = field(default_factory=dict)  # dotted camelCase key -> who set it last
    user_plugins: Any = None  # the plugin choices of the user's own layers alone (None: all are the user's)
    refused: dict[str, list[str]] = field(default_factory=dict)  # plugin -> its plugins.config keys refused

    def origin(self, key: str) -> str:
        return self.origins.get(key, "default")


class RawLayers(NamedTuple):
    """What the files and the environment hold, read once: the project's settings are resolved from it twice,
    first for the plugin choices alone (which plugins load), then against the loaded plugins' models."""

    user: ConfigFile | None
    repo: ConfigFile | None
    environ: dict[str, str]
    warnings: list[str]  # a repository file that could not be read at all


def read_layers(home: Path, project_root: Path | None, environ: dict[str, str] | None = None) -> RawLayers:
    """Read ``$MEMTREE_HOME/config.json`` and the repository's ``.memtree.json``.  Raise :class:`SettingsError`
    when the user's own file is unreadable; a repository's is ignored with a warning."""
    environ = dict(os.environ) if environ is None else environ
    user = _read_json(home / "config.json")
    warnings: list[str] = []
    repo: ConfigFile | None = None
    if project_root:
        try:
            repo = _read_json(project_root / REPO_CONFIG_NAME, link_ok=False)
        except SettingsError as exc:
            warnings.append(f"{exc}; the whole file is ignored")
    return RawLayers(user, repo, environ, warnings)


def resolve(raw: RawLayers, model: type[Settings] = Settings, *, dormant: Dormant | None = None) -> LoadedSettings:
    """The settings ``model`` (the host's, or the host's with the loaded plugins' keys) takes from every
    layer, through its sources.  Raise :class:`SettingsError` on a bad value in the user's own layers (config
    file, environment); drop what the repository may not set, or set badly, with a warning; drop a not-loaded
    plugin's keys (``dormant`` says why) with a warning."""
    job = _Load(raw, dormant)
    token = _JOB.set(job)
    try:
        settings = model()
    finally:
        _JOB.reset(token)
    origins = {k: v for name in ("user", "repo", "env") for k, v in job.origins.get(name, {}).items()}
    files = [layer.origin for layer in (raw.user, raw.repo) if layer is not None]
    own = _merge(job.data.get("user", {}), job.data.get("env", {})).get("plugins", {})
    user_plugins = model.model_fields["plugins"].annotation.model_validate(own)  # type: ignore[union-attr]
    return LoadedSettings(settings, files, job.warnings, origins, user_plugins, job.refused)


def host_settings(raw: RawLayers) -> LoadedSettings:
    """The host's keys alone, with the repository's limits, every other key left aside unchecked: what
    :func:`memtree_core.plugins.build` needs (the plugin set) before any plugin can say which keys it owns."""
    return resolve(raw, Settings, dormant=lambda path: "")


def _drop_dormant(data: dict[str, Any], model: type[BaseModel], job: _Load, origin: str,
                  prefix: tuple[str, ...] = ()) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in data.items():
        hit = _model_field(model, str(key))
        path = (*prefix, str(key))
        if hit is None and job.dormant is not None:
            reason = job.dormant(path)
            if reason is not None:
                if reason:
                    job.warnings.append(f"{origin}: {_plain('.'.join(path))} ignored: {reason}")
                continue
        elif hit is not None and hit[2] is not None and isinstance(value, dict):
            value = _drop_dormant(value, hit[2], job, origin, (*prefix, hit[1]))
        out[key] = value
    return out


# Built-in plugins a repository may not disable: redaction protects secrets; walkers enforce retention (the
# pruner) and the user's store size cap; capture is what records the session at all.
REPO_UNDISABLEABLE = ("capture", "redaction", "walkers")


def _repo_may_set(model: type[BaseModel], path: tuple[str, ...]) -> bool:
    return any(m is REPO_SAFE for m in _along(model, path)[0])


def _repo_safe_inside(model: type[BaseModel], path: tuple[str, ...]) -> bool:
    """Whether some key under the section at ``path`` is repo-safe (a repository gave it a scalar)."""
    node = _along(model, path)[1]
    return node is not None and any(any(m is REPO_SAFE for m in info.metadata) or _repo_safe_inside(node, (name,))
                                    for name, info in node.model_fields.items())


def _why_user_only(model: type[BaseModel], path: tuple[str, ...]) -> str:
    if path[:2] == ("plugins", "config") and len(path) > 2:
        return f"plugin {path[2]!r} does not mark it repo-safe"
    reasons = [m.reason for m in _along(model, path)[0] if isinstance(m, UserOnly)]
    if reasons:
        return reasons[-1]
    if path[0].lower().endswith("url"):
        return "it can send data off this machine or spend on a paid API"
    return SIZES


def _model_field(model: type[BaseModel], key: str, loose: bool = False) -> tuple[str, str, Any] | None:
    """(field name, camelCase alias, nested section model or None) for a key spelled as pydantic accepts it
    (``loose``: in any case, with or without underscores, as an environment variable may spell it)."""
    for name, info in model.model_fields.items():
        alias = info.alias or name
        if key in (name, alias) or (loose and _norm(key) in (_norm(name), _norm(alias))):
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


def _parse_leaf(path: tuple[str, ...], names: tuple[str, ...], value: Any, model: type[BaseModel]) -> Any:
    """The value as the settings model parses it (bounds and all); raises ValidationError."""
    parsed: Any = _validate(model, reduce(lambda inner, key: {key: inner}, reversed(path), value))
    for name in names:
        parsed = getattr(parsed, name)
    return parsed.model_dump(by_alias=True) if isinstance(parsed, BaseModel) else parsed


def _keep_user_plugin_choices(repo: dict[str, Any], job: _Load, origin: str, model: type[Settings]) -> dict[str, Any]:
    """A repository narrows the user's plugin choices, never widens them: what the user's config disables
    stays disabled, and with a user ``plugins.load`` the repository may only pick among those plugins."""
    plugins = repo.get("plugins")
    user = job.data.get("user")
    if not plugins or not user:
        return repo
    mine = _validate(model, user).plugins
    if "disable" in mine.model_fields_set and "disable" in plugins:
        plugins["disable"] = list(dict.fromkeys([*mine.disable, *plugins["disable"]]))
    if "load" in mine.model_fields_set and mine.load and "load" in plugins:
        extra = [p for p in plugins["load"] if p not in mine.load]
        if extra:
            job.warnings.append(f"{origin}: plugins.load of {', '.join(extra)} ignored; your own plugins.load "
                                f"does not name it")
        kept = [p for p in plugins["load"] if p in mine.load]
        if kept:
            plugins["load"] = kept
        else:  # an empty list means "every installed plugin": the user's own list stays instead
            del plugins["load"]
    return repo


MAX_REPO_WARNINGS = 40  # per file; the rest are counted, so a hostile file cannot flood memtree info


def repo_layer(origin: str, data: dict[str, Any], job: _Load, model: type[BaseModel] = Settings) -> dict[str, Any]:
    """The part of a repository's config it may set, parsed; a warning for each key dropped and why (a
    plugin's ``plugins.config`` keys are also listed with the plugin, in ``memtree plugins``)."""
    out: dict[str, Any] = {}
    warnings: list[str] = []

    def drop(path: tuple[str, ...], text: str) -> None:
        warnings.append(f"{origin}: {text}")
        if path[:2] == ("plugins", "config") and len(path) > 2:
            job.refused.setdefault(path[2], []).append(f"{origin}: {text}")

    for path, names, raw in _leaves(data, model):
        key = ".".join(path)
        plugin = path[:2] == ("plugins", "config") and len(path) > 3
        if names is None:  # only an unknown key can be long: the known ones are the model's own names
            drop(path, f"{_unknown(path, model)}; ignored" if plugin else f"unknown key {_shown(key)} ignored")
            continue
        if not _repo_may_set(model, path):
            if _repo_safe_inside(model, path):  # a section, given as a scalar
                drop(path, f"{key} ignored: expected an object (got {_shown(raw)})")
                continue
            drop(path, f"{key} ignored: only your own config or MEMTREE_* environment may set it "
                       f"({_why_user_only(model, path)})")
            continue
        try:
            value = _parse_leaf(path, names, raw, model)
        except ValidationError as exc:
            details = "; ".join(f"{_message(e)} (got {_shown(e.get('input'))})" for e in exc.errors())
            drop(path, f"{key}: {details}; ignored" if plugin else f"{key} ignored: {details}")
            continue
        if path == ("plugins", "disable"):
            refused = sorted({p.strip().lower() for p in value} & set(REPO_UNDISABLEABLE))
            if refused:
                drop(path, f"plugins.disable of {', '.join(map(repr, refused))} ignored; only your own config "
                           f"or MEMTREE_DISABLE_PLUGINS can disable it")
            value = [p for p in value if p.strip().lower() not in REPO_UNDISABLEABLE]
        target = out
        for part in path[:-1]:
            target = target.setdefault(part, {})
        target[path[-1]] = value
    job.warnings.extend(warnings[:MAX_REPO_WARNINGS])
    if len(warnings) > MAX_REPO_WARNINGS:
        job.warnings.append(f"{origin}: {len(warnings) - MAX_REPO_WARNINGS:,} more keys ignored")
    return out
