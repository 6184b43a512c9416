"""The shapes plugins provide.  Hookspecs say *when* a plugin is asked; these say *what* it hands back.

Protocols are structural: an item needs no memtree base class, only these members, and a ``name`` the host
keys its registry by.  Every member the host (or a built-in plugin) reads of an item is declared here: those
an item *may* have in the small protocols under "optional members" at the end, which each kind's docstring
names (``tests/core/test_plugin_context.py`` checks that nothing reads a member declared nowhere).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

if TYPE_CHECKING:
    from memtree_core.context import Context
    from memtree_core.store import NodeRow


def members(protocol: type) -> set[str]:
    """The public members a protocol declares: its methods, properties and annotated attributes."""
    return {n for n in vars(protocol) if not n.startswith("_")} | set(protocol.__annotations__)


@dataclass(frozen=True)
class Chunk:
    """One slice of a file: 1-based inclusive line range, its text and a short outline."""

    start_line: int
    end_line: int
    text: str
    kind: str = "window"  # module_header | function | class | method | section | window | ...
    symbol: str | None = None  # qualified name of the symbol or heading, when there is one
    outline: str = ""  # signatures / headings / first docstring line; never needs an API key
    name: str | None = None  # the definition's own name (``method`` of ``Class.method``)
    signature: str = ""  # the definition's header on one line (``def f(x) -> int``)
    parent: str | None = None  # qualified name of the enclosing definition (a method's class)
    members: tuple[str, ...] = ()  # qualified names of definitions inside it that have no chunk of their own
    part: int = 0  # 2, 3, ... for the later parts of a definition cut for length (its header is in part 1)


@runtime_checkable
class Chunker(Protocol):
    """Splits a file into chunks.  The first match in precedence order (priority first) wins.

    **The tiling rule.**  ``chunk(path, text)`` must return chunks that tile the file: in order, the first
    starting at line 1, each starting on the line after the previous one ends (``end_line >= start_line``),
    the last ending on the file's last line, and each chunk's ``text`` exactly those lines of ``text``
    (line ends kept; lines as :func:`split_lines` splits them).  An empty file has no chunks.  The host checks every
    result (:func:`tiles`); a chunker that breaks the rule or raises is reported failed, with the reason, in
    ``memtree plugins`` and ``memtree info``, and the next matching chunker is used instead.

    Optional: :class:`Configurable` (its plugin's settings), :class:`ReportsAvailability` (``memtree info``
    lists which languages it handles here)."""

    name: str
    priority: int

    def matches(self, path: str) -> bool: ...

    def chunk(self, path: str, text: str) -> list[Chunk]: ...


def split_lines(text: str) -> list[str]:
    """``text``'s lines with their ends, split on ``\\n`` only (what the tiling rule counts as a line)."""
    if not text:
        return []
    parts = text.split("\n")
    lines = [p + "\n" for p in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def tiles(chunks: Sequence[Chunk], text: str) -> str | None:
    """Why ``chunks`` break the :class:`Chunker` tiling rule for ``text``, or None when they keep it."""
    lines = split_lines(text)
    expect = 1
    for i, c in enumerate(chunks):
        if not isinstance(c, Chunk):
            return f"chunk {i + 1} is a {type(c).__name__}, not a memtree_core.types.Chunk"
        if c.start_line != expect:
            return f"chunk {i + 1} starts at line {c.start_line}, expected {expect} (chunks must tile the file)"
        if c.end_line < c.start_line:
            return f"chunk {i + 1} ends (line {c.end_line}) before it starts (line {c.start_line})"
        if c.text != "".join(lines[c.start_line - 1:c.end_line]):
            return f"chunk {i + 1}'s text is not lines {c.start_line}-{c.end_line} of the file"
        expect = c.end_line + 1
    if expect != len(lines) + 1:
        return f"the chunks end at line {expect - 1} of {len(lines)}"
    return None


@runtime_checkable
class Filter(Protocol):
    """Triage of a pending capture: return a short drop reason, or None to keep it.

    Optional: :class:`Configurable`, :class:`NotifiedOnDrop` (told when its reason dropped a node)."""

    name: str

    def check(self, node: NodeRow, app: Context) -> str | None: ...


@runtime_checkable
class RedactionRule(Protocol):
    """Replaces secrets in text with ``[REDACTED:<tag>]``; returns the new text and the hit count.

    Rules see whole texts (a file, an output, a capture), never a chunk of one.  A rule may fold a
    multi-line secret into one mark; the host puts the line breaks back after the mark, so line numbers
    still match the source (:mod:`memtree_core.daemon.redacting`)."""

    name: str

    def redact(self, text: str) -> tuple[str, int]: ...


WalkerTrigger = Literal["event", "idle", "interval"]


@runtime_checkable
class Walker(Protocol):
    """A background routine run by the daemon's coordinator (and by ``memtree walk``).

    ``trigger`` says when it is due: ``event`` (work is waiting, e.g. pending nodes), ``idle`` (no capture
    for ``interval_s()`` seconds) or ``interval`` (every ``interval_s()`` seconds).  ``run`` does a bounded
    amount of work and returns counters for ``memtree stats``.

    Optional: :class:`Configurable`; :class:`Indexer` (``memtree index`` runs it); :class:`PerMachine`."""

    name: str
    trigger: WalkerTrigger

    def interval_s(self, app: Context) -> float: ...

    def has_work(self, app: Context) -> bool: ...

    def run(self, app: Context) -> dict[str, int]: ...


@dataclass
class ToolSpec:
    """An MCP tool.  ``build(app)`` returns the function the MCP server exposes (its signature and
    type hints become the tool's input schema; its return annotation, a pydantic model, the output)."""

    name: str
    build: Callable[[Context], Callable[..., Any]]
    description: str = ""
    title: str | None = None
    read_only: bool = False
    destructive: bool = False
    open_world: bool = False
    # Calling it twice with the same arguments has the effect of calling it once: a restarted daemon may
    # be sent the call again (memtree_core.forwarder.resend).  Read-only tools are idempotent by definition.
    idempotent: bool = False
    # Its fixed resource bounds for ``memtree info`` (timeouts, size caps), read only when asked.
    limits: Callable[[], dict[str, Any]] | None = None


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into vectors.  ``available`` says whether it can run here, and if not, why.

    Optional: :class:`Configurable` (its plugin's settings, e.g. an endpoint), :class:`SendsTo` (where it
    sends texts, which ``memtree info`` lists)."""

    name: str
    model: str
    dim: int

    def available(self) -> tuple[bool, str]: ...

    def embed(self, texts: Sequence[str]) -> list[list[float]]: ...


@runtime_checkable
class Summarizer(Protocol):
    """Writes the text of a ``summary`` node for a subtree.

    Optional: :class:`Configurable`, :class:`SendsTo`."""

    name: str

    def available(self) -> tuple[bool, str]: ...

    def summarize(self, nodes: Sequence[NodeRow], app: Context) -> str: ...


@dataclass
class RankedHit:
    node_id: str
    score: float
    sources: dict[str, float] = field(default_factory=dict)  # per-retriever rank or score


@runtime_checkable
class Ranker(Protocol):
    """Fuses ranked lists from several retrievers (keyword, semantic) into one.

    Optional: :class:`Configurable`; :class:`ReadsQuery` (``fuse`` also takes the query's text)."""

    name: str

    def fuse(self, lists: dict[str, list[tuple[str, float]]], limit: int) -> list[RankedHit]: ...


@runtime_checkable
class Selector(Protocol):
    """Picks what to keep of a long tool output when it is cut to a budget (errors, failing tests...)."""

    name: str
    priority: int

    def matches(self, tool: str, command: str) -> bool: ...

    def select(self, text: str, budget_tokens: int, count: Callable[[str], int]) -> str: ...


@runtime_checkable
class TokenCounter(Protocol):
    """Counts tokens the way budgets are enforced; must never under-count badly.

    Optional: :class:`Versioned` (stored counts are kept across processes per ``name`` and ``version``)."""

    name: str

    def count(self, text: str) -> int: ...


# -- retrievers, capture adapters, output replacers, command policies (the ingest and search seams) ----------
@runtime_checkable
class Retriever(Protocol):
    """Finds nodes for a query.  ``search`` offers each retriever as a mode of its name; ``hybrid`` fuses
    the ``keyword`` retriever's list with those of every available retriever whose ``fuse`` is true (through
    the ranker named by ``search.ranker``), and ``auto`` is ``hybrid`` when one of those is available.

    ``filters`` is what a hit must satisfy (a :class:`~memtree_core.store.node_filter.NodeFilter`): the
    store's named methods take it, and ``filters.sql()`` gives its WHERE fragment over ``nodes n`` for a
    plugin's own storage module.  ``retrieve`` raises ``ValueError`` with the reason when it cannot run here (the tool
    reports it; ``hybrid`` leaves that list out, falling back to keyword search when none is left, and says
    why).  ``auto`` and ``hybrid`` are not retriever names (those modes never reach a retriever by name).

    Optional: :class:`Configurable`; :class:`BuildsResult` (answers its own mode whole, with snippets)."""

    name: str
    fuse: bool

    def available(self, app: Context) -> tuple[bool, str]: ...

    def retrieve(self, app: Context, query: str, limit: int, filters: Any) -> list[tuple[str, float]]: ...


@dataclass
class Capture:
    """One node a capture adapter makes of a hook payload (redaction and the store come after)."""

    kind: str  # a store node kind: file_chunk or tool_output
    content: str
    source_uri: str | None = None
    mtime: int = 0  # the source file's mtime (source_uri: nanoseconds) when the capture is a piece of a file
    metadata: dict[str, Any] = field(default_factory=dict)
    # A cut-down text (read from a persisted output file) that the store must mark truncated.
    original_bytes: int | None = None


@dataclass
class PreparedCapture:
    """What ``memtree_prepare_capture`` hands the host to store: captures whose content, metadata and URI are
    redacted already, and the values redacted per rule (names and counts, never values)."""

    captures: list[Capture]
    hits: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class Dropped:
    """A payload that gives no capture; ``reason`` is short and stable (``capture:dropped:<reason>``)."""

    reason: str


@runtime_checkable
class CaptureAdapter(Protocol):
    """Turns a Claude Code ``PostToolUse``/``PostToolUseFailure`` payload of one of its ``tools`` into the
    captures to store, or a :class:`Dropped` with the reason.  It gets the whole payload (``tool_input``,
    ``tool_response``, ``error`` for a failure...) and must not raise on a strange one; ``max_bytes`` is
    ``capture.maxBytes`` (the store cuts content past it, so reading more of a file is waste).  Put
    ``tool`` and ``tool_use_id`` in each capture's metadata: exactly-once delivery keys on them.  Metadata
    holds plain values only (strings, numbers, booleans, None), which redaction sees; anything else drops
    the capture (``bad-shape:adapter``)."""

    name: str
    tools: tuple[str, ...]

    def captures(self, payload: dict[str, Any], *, max_bytes: int) -> list[Capture] | Dropped: ...


@dataclass
class Replacement:
    """An output replacer's answer: ``output`` is the synchronous hook's stdout object (``{"hookSpecificOutput":
    {"hookEventName": "PostToolUse", "updatedToolOutput": ...}}``), or None to leave the output as it is, with
    a short ``reason`` (counted ``replace:untouched:<reason>``)."""

    output: dict[str, Any] | None
    reason: str


@runtime_checkable
class OutputReplacer(Protocol):
    """Replaces what the model sees of a tool call's output, once the whole output is stored as ``node_id``.

    ``replace`` must never return more than the tool's own output shape holds (same fields, same types), and
    is asked only while replacement is on (the ``selectors`` plugin's ``capture.replace.enabled`` turns it on:
    :mod:`memtree_core.daemon.replacing`); ``truncated``: the store had to cut the node, so it does
    not hold all of the output.  ``delivered`` is called once the reply reached a hook still waiting (count
    savings there, not in ``replace``)."""

    name: str

    def replace(self, app: Context, payload: dict[str, Any], node_id: str, *, truncated: bool = False) -> Replacement:
        ...

    def delivered(self, app: Context, outcome: Replacement) -> None: ...


@runtime_checkable
class CommandPolicy(Protocol):
    """Decides whether a command's output may be stored at all: ``check`` returns a short reason to drop the
    whole capture (``env-dump:printenv``, ``bash.deny:<regex>``), or None.  Every policy runs, in
    registration order; the first reason wins.  A policy that raises drops the capture (fails closed)."""

    name: str

    def check(self, command: str, app: Context) -> str | None: ...


# -- optional members ------------------------------------------------------------------------------------
# What an item may have besides its kind's protocol.  The host (or the built-in plugin that uses items of
# that kind) checks for the member and does without it when it is missing.
@runtime_checkable
class Configurable(Protocol):
    """Any item.  Once its plugin set is loaded for a project, and before the item is used, the host calls
    ``configure`` with its plugin's validated settings (:meth:`Context.plugin_settings` of the plugin that
    registered it, None when it declares none) and the context.  An item whose ``configure`` raises is
    reported failed, with the reason, in ``memtree plugins`` and ``memtree info``, and is not used."""

    def configure(self, settings: Any, app: Context) -> None: ...


@runtime_checkable
class ReportsAvailability(Protocol):
    """A :class:`Chunker` (languages it chunks, ``memtree info``'s ``code_chunking``) or a :class:`RedactionRule`
    (whether it can run; if not, nothing is stored): each with None when it does, or why it does not."""

    def availability(self) -> dict[str, str | None]: ...


@runtime_checkable
class ReadsQuery(Protocol):
    """A :class:`Ranker` with ``reads_query = True``: ``fuse`` is also given the query's text as ``query=``."""

    reads_query: bool

    def fuse(self, lists: dict[str, list[tuple[str, float]]], limit: int, query: str = "") -> list[RankedHit]: ...


@runtime_checkable
class BuildsResult(Protocol):
    """A :class:`Retriever` that, searched alone (its mode), builds the whole search result itself (the
    keyword retriever: its snippets and notes), instead of its ``retrieve`` list being shaped by the search
    tool.  It returns what the search tool returns (the ``retrieval`` plugin's ``SearchResult``)."""

    def result(self, app: Context, query: str, limit: int, filters: Any) -> Any: ...


@runtime_checkable
class NotifiedOnDrop(Protocol):
    """A :class:`Filter` told, inside the transaction that pruned it, that its ``reason`` dropped ``node``."""

    def on_drop(self, node: NodeRow, app: Context, reason: str) -> None: ...


@runtime_checkable
class SendsTo(Protocol):
    """An :class:`Embedder` or :class:`Summarizer` that sends texts to ``url``; ``requires_env`` names the
    environment variable without which it sends nothing (None: always).  ``memtree info`` lists them."""

    url: str
    requires_env: str | None


@runtime_checkable
class Versioned(Protocol):
    """A :class:`TokenCounter` whose counts change between versions: stored counts are keyed by
    ``name@version``, so a new version recounts."""

    version: str | int


@runtime_checkable
class PerMachine(Protocol):
    """A :class:`Walker` whose work is its machine's (its files): every daemon sharing a store runs it."""

    per_machine: bool


@runtime_checkable
class Indexer(Protocol):
    """The ``repo_indexer`` :class:`Walker`, which ``memtree index`` runs on a folder: ``index`` reads the
    files under ``root`` (each at most ``max_bytes``; ``progress``: ``on_file``/``on_total`` callbacks) into
    the store and returns a summary of what it did."""

    default_max_bytes: int

    def index(self, app: Context, root: Path, max_bytes: int, **progress: Any) -> Any: ...
