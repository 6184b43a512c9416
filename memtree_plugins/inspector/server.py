"""The inspector's web server: Starlette routes over the read-only app, served by uvicorn on loopback only.

Access works as Jupyter's does: the first line printed is the URL with a random token; a request carrying
``?token=`` gets a cookie (HttpOnly, SameSite=Strict, named after the port so two inspectors do not
clobber each other) and is redirected to the same address without it, and anything else gets 403.  The
Host header must name the loopback address, so a DNS-rebinding page cannot reach the server by another
name.  Pages carry no script and a Content-Security-Policy that forbids any, and nothing is fetched from
elsewhere: the pages work offline.
"""

from __future__ import annotations

import secrets
import socket
import sys
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from memtree_plugins.inspector import pages
from memtree_plugins.inspector.html import CSS, esc, page

if TYPE_CHECKING:
    from memtree_core.context import Context

HOST = "127.0.0.1"
TOKEN_PARAM = "token"
HEADERS = {
    "Content-Security-Policy": "default-src 'none'; style-src 'self'; img-src 'self' data:; form-action 'self'; "
                               "frame-ancestors 'none'; base-uri 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
    "X-Frame-Options": "DENY",
}
FORBIDDEN = ("403 Forbidden: open the address 'memtree ui' printed (it carries ?token=...); "
             "this server answers no one else.\n")


def cookie_name(port: int) -> str:
    return f"memtree_ui_{port}"


class Guard:
    """Token check, Host check, security headers and the Server-Timing of every response (pure ASGI)."""

    def __init__(self, app: ASGIApp, token: str, port: int) -> None:
        self.app = app
        self.token = token
        self.port = port
        self.hosts = {f"{HOST}:{port}", f"localhost:{port}"}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        request = Request(scope)
        response: Response | None = None
        if request.headers.get("host", "") not in self.hosts:
            response = PlainTextResponse("403 Forbidden: unexpected Host header; use the address memtree ui "
                                         "printed.\n", status_code=403)
        elif secrets.compare_digest(request.query_params.get(TOKEN_PARAM, ""), self.token):
            # Trade the token in the address for a cookie, and drop it from the address (history, copies).
            rest = [(k, v) for k, v in request.query_params.multi_items() if k != TOKEN_PARAM]
            response = RedirectResponse(request.url.path + ("?" + urlencode(rest) if rest else ""), status_code=303)
            response.set_cookie(cookie_name(self.port), self.token, httponly=True, samesite="strict", path="/")
        elif not secrets.compare_digest(request.cookies.get(cookie_name(self.port), ""), self.token):
            response = PlainTextResponse(FORBIDDEN, status_code=403)
        if response is not None:
            await self._send(response, started, scope, receive, send)
            return

        async def timed_send(message: Any) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                headers += [(k.lower().encode(), v.encode()) for k, v in HEADERS.items()]
                headers.append((b"server-timing", f"app;dur={(time.perf_counter() - started) * 1000:.2f}".encode()))
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, timed_send)

    async def _send(self, response: Response, started: float, scope: Scope, receive: Receive, send: Send) -> None:
        for k, v in HEADERS.items():
            response.headers[k] = v
        response.headers["Server-Timing"] = f"app;dur={(time.perf_counter() - started) * 1000:.2f}"
        await response(scope, receive, send)


def _view(app: Context, render: Callable[..., pages.Page], with_id: bool = False) -> Callable[[Request], Response]:
    project = str(app.project_root)

    def endpoint(request: Request) -> Response:
        params = dict(request.query_params)
        try:
            result = render(app, request.path_params["node_id"], params) if with_id else render(app, params)
        except Exception as exc:  # a page that fails says why, in one line, and the server goes on
            from memtree_core.errors import UserFacingError

            code = 503 if isinstance(exc, UserFacingError) else 500
            result = pages.Page("Error", f'<p class="error">{esc(type(exc).__name__)}: {esc(exc)}</p>', "", code)
        return HTMLResponse(page(result.title, result.body, active=result.active, project=project),
                            status_code=result.status)

    return endpoint


def build(app: Context, token: str, port: int) -> ASGIApp:
    """The ASGI app: every page behind :class:`Guard`."""
    routes = [
        Route("/", _view(app, pages.tree)),
        Route("/files", _view(app, pages.files)),
        Route("/file", _view(app, pages.file)),
        Route("/node/{node_id}", _view(app, pages.node, with_id=True)),
        Route("/search", _view(app, pages.search)),
        Route("/compose", _view(app, pages.compose)),
        Route("/stats", _view(app, pages.stats)),
        Route("/style.css", lambda request: Response(CSS, media_type="text/css")),
    ]
    return Guard(Starlette(routes=routes), token, port)


def bind(port: int) -> socket.socket:
    """A listening socket on the loopback address only (``port`` 0: any free port)."""
    from memtree_core.errors import UsageError

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.bind((HOST, port))
    except OSError as exc:
        sock.close()
        raise UsageError(f"cannot listen on {HOST}:{port}: {exc.strerror or exc}; pick another --port "
                         "(0 picks a free one)") from None
    sock.listen(64)
    return sock


def run(app: Context, port: int = 0, open_browser: bool = True) -> int:
    """Serve until interrupted; the first line on stdout is the address with the token."""
    import uvicorn

    from memtree_plugins.inspector.readonly import ReadOnlyApp
    from memtree_plugins.lib.store_place import store_name

    ro = ReadOnlyApp.of(app)
    ro.store  # noqa: B018 -- opened now, so a missing or damaged store is one clear line before any URL
    sock = bind(port)
    port = sock.getsockname()[1]
    token = secrets.token_urlsafe(32)
    url = f"http://{HOST}:{port}/?{TOKEN_PARAM}={token}"
    print(url, flush=True)
    print(f"memtree ui: {store_name(ro)} (read-only) for {ro.project_root}; Ctrl-C stops", file=sys.stderr,
          flush=True)
    if open_browser:
        import webbrowser

        threading.Thread(target=webbrowser.open, args=(url,), daemon=True).start()
    server = uvicorn.Server(uvicorn.Config(build(ro, token, port), log_level="warning", access_log=False,
                                           lifespan="off", server_header=False))
    try:
        server.run(sockets=[sock])
    finally:
        sock.close()
        ro.close()
    return 0
