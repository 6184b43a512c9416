"""Every network destination memtree may send stored content to, and who chose it.

Only the user's own config file or ``MEMTREE_*`` environment can set a destination (a repository's
``.memtree.json`` cannot: fields marked :data:`memtree_core.settings.REPO_SAFE`), and ``memtree info`` names each one in
effect.  Hosts are judged by their literal name only: nothing here resolves a name or opens a connection.
"""

from __future__ import annotations

import ipaddress
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

if TYPE_CHECKING:
    from memtree_core.context import Context

LOCAL_NAMES = {"localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback"}


@dataclass
class Destination:
    what: str  # e.g. "embedder ollama"
    url: str
    origin: str  # "default", a config file path, "environment variable MEMTREE_…", or a plugin
    local: bool  # the host is this machine (loopback), so nothing leaves it
    active: bool  # content is sent there now (not merely configured)
    note: str = ""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def describe(self) -> str:
        where = "this machine" if self.local else "ANOTHER MACHINE"
        return f"{self.what} -> {self.url} ({where}; set by {self.origin})" + (f"; {self.note}" if self.note else "")


def is_local(url: str) -> bool:
    """True when the URL's host is a loopback address or name; an unparsable URL is not local."""
    try:
        host = (urlsplit(url).hostname or "").rstrip(".").lower()
    except ValueError:
        return False
    if host in LOCAL_NAMES or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _from_plugin(kind: str, entry: Any, environ: dict[str, str]) -> Destination | None:
    """A registered embedder or summarizer that names its endpoint in a ``url`` attribute (and, if it only
    sends when a variable is set, that variable in ``requires_env``)."""
    url = getattr(entry.item, "url", None)
    if not isinstance(url, str) or not url:
        return None
    needs = getattr(entry.item, "requires_env", None)
    active = not needs or bool(environ.get(needs))
    note = "" if active else f"inactive: {needs} is not set"
    return Destination(f"{kind} {entry.name}", url, f"plugin {entry.plugin}", is_local(url), active, note)


def in_effect(app: Context) -> list[Destination]:
    """The destinations the registered embedders and summarizers would send content to."""
    out: list[Destination] = []
    for entry in app.plugins.embedders.entries():
        if entry.name == "ollama" and entry.plugin == "embedders":
            # The built-in Ollama embedder's endpoint is a setting: say which of the user's layers set it.
            url = app.plugin_settings("embedders").ollama_url
            out.append(Destination("embedder ollama", url, app.loaded.origin("ollamaUrl"), is_local(url), True,
                                   "probed; when it is the embedder in use, file text and tool outputs are sent to /api/embed"))
        elif (dest := _from_plugin("embedder", entry, app.environ)) is not None:
            out.append(dest)
    for entry in app.plugins.summarizers.entries():
        if (dest := _from_plugin("summarizer", entry, app.environ)) is not None:
            out.append(dest)
    return out
