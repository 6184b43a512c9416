"""The daemon's MCP server: server name ``memtree``, one tool per registered :class:`ToolSpec`.

A tool function returns a pydantic model with ``render() -> str``.  The client gets both forms: the model
as structured content (validated against the published output schema) and ``render()`` as the text the
model reads.  A tool that raises gets an error result carrying its message; the session goes on.
"""

from __future__ import annotations

import inspect
import logging
import threading
import typing
from collections.abc import Callable
from typing import Annotated, Any

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.exceptions import MCPError
from mcp_types import INTERNAL_ERROR, CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel

from memtree_core.daemon.early import Built, build_tools
from memtree_core.daemon.limits import SESSION_TOOL_THREADS, TOOL_THREADS
from memtree_core.daemon.per_session import PerSession
from memtree_core.daemon.project import write_json
from memtree_core.forwarder.resend import TOOL_HINTS_FILE
from memtree_core.types import ToolSpec

log = logging.getLogger("memtree.daemon.tools")

_tool_threads: anyio.CapacityLimiter | None = None
_session_threads = PerSession(lambda: anyio.CapacityLimiter(SESSION_TOOL_THREADS))
CONTEXT_KWARG = "memtree_request_context"  # the SDK passes the request's Context here (not in the schema)


def tool_threads() -> anyio.CapacityLimiter:
    """The sync tools' own thread pool (see :data:`memtree_core.daemon.limits.TOOL_THREADS`)."""
    global _tool_threads
    if _tool_threads is None:
        _tool_threads = anyio.CapacityLimiter(TOOL_THREADS)
    return _tool_threads


def session_threads(ctx: Any) -> anyio.CapacityLimiter | None:
    """One session's share of the pool: a session with many slow calls waits for its own, never takes all.
    None outside a session (in-process embedding): the pool's own bound still applies."""
    return _session_threads.get(ctx)


# Failures a caller can cause and fix (bad path, unknown node id, bad budget): the message goes back as is.
EXPECTED_ERRORS: tuple[type[BaseException], ...] = (ValueError, LookupError, OSError, TimeoutError)


def _renders(annotation: Any) -> bool:
    return isinstance(annotation, type) and issubclass(annotation, BaseModel) and callable(
        getattr(annotation, "render", None))


def _error_message(spec: ToolSpec, exc: BaseException, log_path: str) -> str:
    from memtree_core.errors import UserFacingError

    if isinstance(exc, EXPECTED_ERRORS + UserFacingError):
        return str(exc) or type(exc).__name__
    # A bug in a tool: say what broke and where the traceback is, never hide it behind a generic line.
    return f"internal error in tool {spec.name!r}: {type(exc).__name__}: {exc} (traceback in {log_path})"


def _to_result(value: Any) -> Any:
    if isinstance(value, BaseModel) and callable(getattr(value, "render", None)):
        return CallToolResult(content=[TextContent(type="text", text=value.render())],
                              structured_content=value.model_dump(mode="json", by_alias=True))
    return value


def refuse_if_damaged(app: Any) -> None:
    """Every tool answers a damaged store with the same clear error (and what to run), whatever it does."""
    damaged = getattr(app, "damaged", None)
    if damaged:
        raise ToolError(damaged)


def wrap_tool(spec: ToolSpec, fn: Callable[..., Any], app: Any) -> Callable[..., Any]:
    """Give ``fn`` the same parameters, return both result forms and turn its exceptions into tool errors.

    A sync ``fn`` runs on a worker thread from :func:`tool_threads`; an async one on the event loop.  Every
    call counts as activity for the walkers that wait for a quiet period.
    """
    from memtree_core.daemon.coordinator import note_activity

    log_path = str(app.paths.log)
    hints = typing.get_type_hints(fn, include_extras=True)
    sig = inspect.signature(fn)
    returns = hints.get("return", sig.return_annotation)
    # Annotated[CallToolResult, Model]: the SDK publishes Model's schema and checks our structured content.
    new_return = Annotated[CallToolResult, returns] if _renders(returns) else returns
    params = [p.replace(annotation=hints.get(p.name, p.annotation)) for p in sig.parameters.values()]
    # A tool may take the calling session's request context (to say something once per session): it declares
    # a parameter of this name, of any annotation.
    wants_context = CONTEXT_KWARG in sig.parameters

    from memtree_core.errors import UserFacingError

    def fail(exc: Exception) -> typing.NoReturn:
        if isinstance(exc, ToolError):
            raise exc
        from memtree_core.store.store import is_corruption

        if not isinstance(exc, EXPECTED_ERRORS) and is_corruption(exc):
            log.error("tool %s: the store is damaged: %s", spec.name, exc)
            raise ToolError(app.mark_damaged(exc)) from exc
        if not isinstance(exc, EXPECTED_ERRORS + UserFacingError):
            log.exception("tool %s crashed", spec.name)
        raise ToolError(_error_message(spec, exc, log_path)) from exc

    if inspect.iscoroutinefunction(fn):
        async def tool(**kwargs: Any) -> Any:
            note_activity(app)
            refuse_if_damaged(app)
            try:
                return _to_result(await fn(**kwargs))
            except Exception as exc:
                fail(exc)
    else:
        def call(kwargs: dict[str, Any]) -> Any:
            note_activity(app)
            refuse_if_damaged(app)
            try:
                return _to_result(fn(**kwargs))
            except Exception as exc:
                fail(exc)

        async def tool(**kwargs: Any) -> Any:
            ctx = kwargs.get(CONTEXT_KWARG) if wants_context else kwargs.pop(CONTEXT_KWARG, None)
            mine = session_threads(ctx)
            # abandon_on_cancel: a session that ends, or a daemon that stops, does not wait for the thread
            # (the daemon ends the call's processes, so the thread returns soon after).
            if mine is None:
                return await anyio.to_thread.run_sync(call, kwargs, limiter=tool_threads(), abandon_on_cancel=True)
            async with mine:
                return await anyio.to_thread.run_sync(call, kwargs, limiter=tool_threads(), abandon_on_cancel=True)

    annotations = {k: v for k, v in hints.items() if k != "return"}
    takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params)
    if wants_context:  # the tool's own parameter: filled by the SDK, kept out of the schema
        params = [p.replace(annotation=Context | None) if p.name == CONTEXT_KWARG else p for p in params]
        annotations[CONTEXT_KWARG] = Context | None
    elif not inspect.iscoroutinefunction(fn) and not takes_any:
        # Which session calls: the SDK fills a parameter annotated Context and leaves it out of the schema.
        params.append(inspect.Parameter(CONTEXT_KWARG, inspect.Parameter.KEYWORD_ONLY, default=None,
                                        annotation=Context | None))
        annotations[CONTEXT_KWARG] = Context | None
    tool.__name__ = getattr(fn, "__name__", spec.name)
    tool.__qualname__ = tool.__name__
    tool.__doc__ = fn.__doc__
    tool.__annotations__ = {**annotations, "return": new_return}
    tool.__signature__ = sig.replace(parameters=params, return_annotation=new_return)  # type: ignore[attr-defined]
    return tool


class MemtreeServer(MCPServer):
    """``MCPServer`` that answers the handshake before its tools exist.

    The daemon serves ``initialize`` as soon as the SDK is imported and registers the plugins' tools on a
    worker thread meanwhile, to keep memtree's share of the cold start small
    (``docs/architecture.md#process-model``); ``tools/list`` and ``tools/call`` wait until the tools are
    there, or answer with the reason they never will be.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.tools_ready = threading.Event()  # set by the boot thread
        self.boot_error: str | None = None

    async def _tools(self) -> None:
        while not self.tools_ready.is_set():
            await anyio.sleep(0.005)
        if self.boot_error is not None:
            raise MCPError(code=INTERNAL_ERROR, message=self.boot_error)

    async def _handle_list_tools(self, ctx: Any, params: Any) -> Any:
        await self._tools()
        return await super()._handle_list_tools(ctx, params)

    async def _handle_call_tool(self, ctx: Any, params: Any) -> Any:
        await self._tools()
        unknown = unknown_arguments(self, params.name, params.arguments or {})
        if unknown:
            # The SDK drops arguments a tool does not declare; a misspelt filter would then widen the
            # answer without a word.  Say which ones, and what the tool takes.
            return CallToolResult(content=[TextContent(type="text", text=unknown)], is_error=True)
        return await super()._handle_call_tool(ctx, params)


def _declared(server: MCPServer, name: str) -> list[str] | None:
    tool = server._tool_manager.get_tool(name)
    if tool is None:
        return None
    return list((tool.parameters or {}).get("properties", {}))


def unknown_arguments(server: MCPServer, name: str, arguments: dict[str, Any]) -> str | None:
    """A one-line error naming the arguments ``name`` does not take, or None when all are known."""
    declared = _declared(server, name)
    if declared is None:
        return None  # an unknown tool: the SDK says so
    extra = [k for k in arguments if k not in declared]
    if not extra:
        return None
    return (f"tool {name!r} has no argument{'s' if len(extra) > 1 else ''} {', '.join(map(repr, extra))}; "
            f"it takes: {', '.join(declared) or 'no arguments'}")


def create_server(version: str) -> MemtreeServer:
    return MemtreeServer(name="memtree", version=version,
                         instructions="memtree: a local context store for this project. Wrapped read/grep/bash "
                                      "keep large outputs out of the context window; search/compose recall "
                                      "what was stored.")


def register_tools(server: MCPServer, app: Any, built: list[Built] | None = None) -> list[str]:
    """Add every tool the plugin set registered (``built``: as :func:`memtree_core.daemon.early.build_tools`
    built them); return their names.  Runs on any thread, before ``tools_ready`` is set."""
    added = []
    hints: list[dict[str, Any]] = []
    for b in build_tools(app) if built is None else built:
        spec: ToolSpec = b.spec
        try:
            if b.error is not None:
                raise b.error
            fn = b.fn
            server.add_tool(
                wrap_tool(spec, fn, app), name=spec.name, title=spec.title,
                description=spec.description or (fn.__doc__ or "").strip(),
                annotations=ToolAnnotations(title=spec.title, read_only_hint=spec.read_only,
                                            destructive_hint=spec.destructive,
                                            idempotent_hint=spec.idempotent or spec.read_only,
                                            open_world_hint=spec.open_world))
            tool = server._tool_manager.get_tool(spec.name)
            if tool is not None:  # publish what the call checks: no argument beyond those listed
                tool.parameters.setdefault("additionalProperties", False)
            added.append(spec.name)
            hints.append({"name": spec.name, "annotations": {"readOnlyHint": spec.read_only,
                                                             "idempotentHint": spec.idempotent or spec.read_only}})
        except Exception:
            # One broken tool plugin must not take the others down; the log says why.
            log.exception("tool %r from plugin %s could not be registered; skipped", spec.name, b.plugin)
    try:  # the tools' annotations (tools/list shape), for forwarders whose client never listed them
        write_json(str(app.paths.dir / TOOL_HINTS_FILE), {"tools": hints})
    except OSError as exc:
        log.warning("cannot record the tools' annotations for forwarders: %s", exc)
    return added
