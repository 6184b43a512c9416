"""A session's first requests, answered before the MCP SDK is imported (docs/architecture.md#process-model).

A cold daemon imports the SDK (half a second of one core, holding the GIL) and registers its tools before
the SDK answers anything; an agent's first search would wait for both, then for the embedding model.  When
a daemon of the same version recorded its answers before (:mod:`memtree_core.daemon.handshake`), this layer
answers instead, until the SDK is ready, and the daemon imports the SDK only once these answers are out:

* ``initialize``, from the recorded answer for the client's protocol version; ``ping``;
* ``tools/list``, from the recorded answer, once the app is open and its tools fingerprint as recorded;
* ``tools/call`` of a read-only tool whose arguments validate *strictly* against its signature (no
  coercion, so the SDK's lax validation would give the same values): the same function the SDK calls,
  answered in the SDK's result shape (text from ``render()``, the model as structured content).

Anything else is deferred, with every line after it; so is a call that fails (a read-only tool: running it
again is harmless), so every error is the SDK's own.  Once ready, the SDK gets the connection's
``initialize`` (its answer dropped: the client has it), ``notifications/initialized``, and the deferred lines
in order (:mod:`memtree_core.daemon.sessions`).  Standard library and pydantic only: nothing here imports
the SDK.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import logging
import threading
import time
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memtree_core.forwarder import records

log = logging.getLogger("memtree.daemon.early")

TOOLS_FILE, TOOLS_FORMAT = "tools.json", 1  # the recorded tools/list and tools/call answers (handshake.py)
PROBE_TEXT, PROBE_STRUCTURED = "memtree-probe-text", "memtree-probe-value"  # the recorded tools/call's content
CONTEXT_KWARG = "memtree_request_context"  # as memtree_core.daemon.tools: filled by the daemon, not the client
IDLE_POLL_S = 0.005
RECORD_BYTES = 16 << 20  # a record bigger than this is not one the daemon wrote


@dataclass
class Built:
    """A registered tool's spec and the function its plugin built for this app (or why it could not)."""

    plugin: str
    spec: Any
    fn: Any = None
    error: BaseException | None = None


def build_tools(app: Any) -> list[Built]:
    """Every tool the plugin set registered, built once for both the early layer and the SDK."""
    built = []
    for entry in app.plugins.tools.entries():
        spec = entry.item
        try:
            built.append(Built(entry.plugin, spec, spec.build(getattr(app, "context", app))))
        except Exception as exc:
            built.append(Built(entry.plugin, spec, error=exc))
    return built


def fingerprint(version: str, built: list[Built]) -> str:
    """What a tools/list answer follows from: the code's version and each tool's spec and signature."""
    parts: list[Any] = [version]
    for b in built:
        if b.fn is None:
            continue
        s = b.spec
        parts.append([s.name, s.title, s.description, b.fn.__doc__, str(inspect.signature(b.fn)), s.read_only,
                      s.destructive, s.idempotent, s.open_world])
    return hashlib.sha256(json.dumps(parts, default=repr).encode()).hexdigest()


def _renders(annotation: Any) -> bool:
    from pydantic import BaseModel

    return isinstance(annotation, type) and issubclass(annotation, BaseModel) and callable(
        getattr(annotation, "render", None))


@dataclass
class EarlyTool:
    """A read-only tool callable before the SDK: its function and a strict validator of its arguments."""

    built: Built
    takes_context: bool
    _model: Any = None

    @classmethod
    def of(cls, built: Built) -> EarlyTool | None:
        fn = built.fn
        if fn is None or not built.spec.read_only or inspect.iscoroutinefunction(fn):
            return None
        try:
            hints = typing.get_type_hints(fn, include_extras=True)
            sig = inspect.signature(fn)
        except Exception:
            return None
        if not _renders(hints.get("return")) or any(
                p.kind in (p.VAR_KEYWORD, p.VAR_POSITIONAL, p.POSITIONAL_ONLY) for p in sig.parameters.values()):
            return None
        return cls(built, CONTEXT_KWARG in sig.parameters)

    def arguments(self, given: Any) -> dict[str, Any] | None:
        """The keyword arguments for ``given``, or None when they do not validate strictly (the SDK decides)."""
        if not isinstance(given, dict):
            return None
        try:
            if self._model is None:
                self._model = self._make_model()
            parsed = self._model.model_validate(given)
        except Exception:
            return None
        kwargs = {name: getattr(parsed, name) for name in type(parsed).model_fields}
        if self.takes_context:
            kwargs[CONTEXT_KWARG] = None  # the session is the connection (memtree_core.daemon.per_session)
        return kwargs

    def _make_model(self) -> Any:
        from pydantic import ConfigDict, create_model

        fn = self.built.fn
        hints = typing.get_type_hints(fn, include_extras=True)
        fields = {name: (hints.get(name, Any), ... if p.default is p.empty else p.default)
                  for name, p in inspect.signature(fn).parameters.items() if name != CONTEXT_KWARG}
        config = ConfigDict(strict=True, extra="forbid", arbitrary_types_allowed=True)
        return create_model(f"{self.built.spec.name}_early_arguments", __config__=config, **fields)

    def call(self, app: Any, kwargs: dict[str, Any], shape: dict[str, Any]) -> dict[str, Any]:
        """The tools/call result as the SDK would send it: the recorded probe's answer ``shape`` (see
        :func:`call_shape`) with this call's text and structured content (memtree_core.daemon.tools._to_result)."""
        from memtree_core.daemon.coordinator import note_activity

        note_activity(app)
        from pydantic import BaseModel

        value = self.built.fn(**kwargs)
        if not (isinstance(value, BaseModel) and callable(getattr(value, "render", None))):
            raise TypeError("not a rendered model")
        result = dict(shape, content=[{"type": "text", "text": value.render()}])
        if "structuredContent" in shape:
            result["structuredContent"] = value.model_dump(mode="json", by_alias=True)
        return result


def call_shape(recorded: Any) -> dict[str, Any] | None:
    """The recorded probe call's answer, if it is one this layer can fill in: its content exactly the probe's
    text, its structured content (if the protocol version keeps it) exactly the probe's model."""
    if not isinstance(recorded, dict) or recorded.get("content") != [{"type": "text", "text": PROBE_TEXT}]:
        return None
    if recorded.get("structuredContent", {"probe": PROBE_STRUCTURED}) != {"probe": PROBE_STRUCTURED}:
        return None
    return recorded


@dataclass
class Early:
    """What this daemon may answer before its SDK is ready: loaded from the records at start, armed with the
    app's tools once they are built.  Shared by every connection; ``busy`` counts the requests it is still
    answering (the daemon imports the SDK once it is 0, within a bound)."""

    initialize: dict[str, str]  # protocol version asked -> the recorded initialize result, as JSON text
    tools_record: tuple[str, dict[str, Any]] | None  # (fingerprint, protocol -> {method: result as JSON text})
    armed: threading.Event = field(default_factory=threading.Event)
    answers: dict[str, Any] = field(default_factory=dict)  # once armed: protocol -> {method: JSON text}
    tools: dict[str, EarlyTool] = field(default_factory=dict)
    app: Any = None
    busy: int = 0
    answered: int = 0

    @classmethod
    def load(cls, directory: Path, version: str) -> Early | None:
        """The records of a daemon of this ``version``, or None (then every first request waits for the SDK)."""
        try:  # as the forwarder reads it: this user's regular file, closed to others, never through a link
            handshake = json.loads(records.read(str(directory / records.HANDSHAKE_FILE), RECORD_BYTES) or b"null")
            if handshake.get("format") != records.HANDSHAKE_FORMAT or handshake.get("version") != version:
                return None
            answers = {str(p): m["initialize"] for p, m in handshake["answers"].items()
                       if isinstance(m, dict) and isinstance(m.get("initialize"), str)}
        except (OSError, ValueError, TypeError, KeyError, AttributeError):
            return None
        tools_record = None
        try:
            saved = json.loads(records.read(str(directory / TOOLS_FILE), RECORD_BYTES) or b"null")
            if saved.get("format") == TOOLS_FORMAT and saved.get("version") == version:
                tools_record = (str(saved["fingerprint"]), dict(saved["answers"]))
        except (OSError, ValueError, TypeError, KeyError, AttributeError):
            pass
        return cls(answers, tools_record) if answers else None

    def arm(self, app: Any, built: list[Built], version: str) -> None:
        """The app is open and its tools built: answer tools/list and calls, if the tools are the recorded ones."""
        try:
            if self.tools_record is not None and self.tools_record[0] == fingerprint(version, built):
                self.app, self.answers = app, self.tools_record[1]
                self.tools = {b.spec.name: t for b in built if (t := EarlyTool.of(b)) is not None}
            else:
                log.info("the tools differ from the recorded ones: tools/list and calls wait for the SDK")
        finally:
            self.armed.set()

    def disarm(self) -> None:
        """The app failed to open: whatever waits goes to the SDK, which answers with the reason."""
        self.answers, self.tools = {}, {}
        self.armed.set()

    def tools_list(self, protocol: str) -> str | None:
        answer = self.answers.get(protocol, {}).get("tools/list") if isinstance(self.answers, dict) else None
        return answer if isinstance(answer, str) else None

    def call_shape(self, protocol: str) -> dict[str, Any] | None:
        try:
            return call_shape(json.loads(self.answers[protocol]["tools/call"]))
        except (KeyError, TypeError, ValueError):
            return None

    def wait_idle(self, bound_s: float) -> None:
        """Until no early answer is in progress (at most ``bound_s``): the SDK's import would slow them."""
        end = time.monotonic() + bound_s
        while self.busy > 0 and time.monotonic() < end:
            time.sleep(IDLE_POLL_S)
