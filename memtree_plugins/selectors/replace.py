"""The built-in output replacer: long Bash and Grep output cut to a budgeted slice by the selectors.

The host (:mod:`memtree_core.daemon.replacing`) stores the full output exactly as passive capture does (one node:
the async capture of the same call is deduplicated by ``tool_use_id``), then asks the registered output
replacers for the hook's stdout; this one answers ``hookSpecificOutput.updatedToolOutput`` in the tool's own
output shape (same fields, same types; otherwise Claude Code logs an error and keeps the original).

What is replaced (``capture.replace``, off by default, this plugin's setting: :mod:`.settings`):
    Bash ``stdout``/``stderr`` and Grep ``content`` (content and count modes) or ``filenames`` when their
    tokens exceed the tool's threshold; each cut by the best matching selector to fit ``budgetTokens``
    together with a footer naming the node that holds the whole output.  Every other field is copied.
What never is:
    Read (an Edit needs the model to have seen the file; see README), images and binary output,
    PostToolUseFailure payloads (no ``tool_response``), outputs the store had to cut (``capture.maxBytes``:
    the node would not hold what the slice leaves out), denied or uncaptured commands (no node at all).

Accounting: only outputs actually replaced count, measured with ``app.count_tokens`` (the budgets'
counter): ``replace:original_tokens:<tool>``, ``replace:window_tokens:<tool>``, ``replace:saved_tokens:
<tool>``, ``replace:outputs:<tool>`` and per session ``replace:session:<session_id>:saved_tokens`` /
``...:outputs``.  The host calls :meth:`SliceReplacer.delivered` only after the reply was written to a client
still waiting.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from memtree_core.types import Replacement, Selector
from memtree_plugins.selectors.settings import replace_settings

if TYPE_CHECKING:
    from memtree_core.context import Context

log = logging.getLogger("memtree.replace")

TOOLS = ("Bash", "Grep")


# -- choosing a selector --------------------------------------------------------------------------------------
def selectors_for(app: Context, tool: str, command: str) -> list[Selector]:
    """The selectors matching this output in precedence order (Registry.ranked: priority, then pluggy's
    call order).  The first one cuts; the last one (the built-in ``generic``, which matches everything at
    priority 0) stands in for one that fails.  None: no selector plugin, so no replacement."""
    matching = []
    for selector in app.plugins.selectors.ranked():
        try:
            if selector.matches(tool, command):
                matching.append(selector)
        except Exception:
            log.exception("selector %s failed in matches(); skipped", getattr(selector, "name", "?"))
    return matching


def selector_for(app: Context, tool: str, command: str) -> Selector | None:
    matching = selectors_for(app, tool, command)
    return matching[0] if matching else None


class NoCut(Exception):
    """Neither the chosen selector nor its stand-in kept the text within the budget."""


def cut(app: Context, selectors: list[Selector], text: str, budget: int) -> str:
    """The first selector's ``select`` held to the budget; one that overshoots or fails gives way to the
    last (lowest-precedence) matching one.  Raises :class:`NoCut` when that fails too."""
    count = app.count_tokens
    if budget <= 0:
        return ""
    for selector in dict.fromkeys((selectors[0], selectors[-1])):
        try:
            out = selector.select(text, budget, count)
            if isinstance(out, str) and count(out) <= budget:
                return out
            log.warning("selector %s returned more than %d tokens", selector.name, budget)
        except Exception:
            log.exception("selector %s failed", getattr(selector, "name", "?"))
    raise NoCut(f"no selector kept the output within {budget} tokens")


# -- building the replacement ---------------------------------------------------------------------------------
@dataclass
class Outcome(Replacement):
    """What :func:`build` decided: ``output`` is the hook's stdout object, or None with ``reason``."""

    tool: str = "?"
    session_id: str = ""
    original_tokens: int = 0
    window_tokens: int = 0
    fields: dict[str, str] = field(default_factory=dict)  # the replaced text fields (tests, benchmarks)


def footer(node_id: str, kept: int, total: int, what: str = "output") -> str:
    return (f"\n[memtree: {what} cut to ~{kept:,} of {total:,} tokens; the whole of it is node {node_id}: "
            f'mcp__memtree__get {{"node_id": "{node_id}"}} pages through it, mcp__memtree__search finds in it]\n')


def _shares(sizes: dict[str, int], room: int) -> dict[str, int]:
    """Split ``room`` between text fields, smallest first, none over an equal share of what is left: a short
    stderr is kept whole, and a long stdout cannot starve the stderr that holds the error."""
    out: dict[str, int] = {}
    order = sorted(sizes, key=sizes.__getitem__)
    for i, k in enumerate(order):
        out[k] = min(sizes[k], room // (len(order) - i))
        room -= out[k]
    return out


def build(app: Context, payload: dict[str, Any], node_id: str, *, truncated: bool = False) -> Outcome:
    """The replacement for one captured payload whose whole output is node ``node_id``; never raises."""
    try:
        return _build(app, payload, node_id, truncated)
    except Exception as exc:
        log.exception("building a replacement failed; the output passes untouched")
        return Outcome(None, f"error:{type(exc).__name__}")


def _build(app: Context, payload: dict[str, Any], node_id: str, truncated: bool) -> Outcome:
    settings = replace_settings(app)
    tool = payload.get("tool_name") if isinstance(payload.get("tool_name"), str) else "?"
    session = payload.get("session_id") if isinstance(payload.get("session_id"), str) else ""
    if payload.get("hook_event_name") != "PostToolUse":
        return Outcome(None, "not-post-tool-use", tool, session)
    if tool not in TOOLS:
        # Read is never replaced, whatever its threshold says: see the module doc and README.
        return Outcome(None, "tool-not-replaced", tool, session)
    threshold = settings.thresholds.bash if tool == "Bash" else settings.thresholds.grep
    if threshold <= 0:
        return Outcome(None, "threshold-off", tool, session)
    response = payload.get("tool_response")
    if not isinstance(response, dict):
        return Outcome(None, "no-response", tool, session)
    fields = _text_fields(tool, response)
    if fields is None:
        return Outcome(None, "not-text", tool, session)
    count = app.count_tokens
    sizes = {k: count(v) for k, v in fields.items()}
    total = sum(sizes.values())
    if total <= threshold:
        return Outcome(None, "under-threshold", tool, session, total)
    if truncated:
        # The node holds only capture.maxBytes of it: a slice would leave out text nothing can page back.
        return Outcome(None, "stored-truncated", tool, session, total)
    budget = settings.budget_tokens
    command = _command(tool, payload)
    selectors = selectors_for(app, tool, command)
    if not selectors:
        return Outcome(None, "no-selector", tool, session, total)  # the selectors plugin is disabled
    # The footer's figures are not known until the cut is made: reserve room for the widest one.
    room = budget - count(footer(node_id, budget, total))
    host = "stdout" if tool == "Bash" else ("content" if "content" in fields else "filenames")
    for _attempt in range(3):
        try:
            cuts = _cut_fields(app, selectors, fields, sizes, room)
        except NoCut:
            return Outcome(None, "no-cut", tool, session, total)
        kept = {k: _redacted(app, v) for k, v in cuts.items()}
        tail = footer(node_id, sum(count(v) for v in kept.values()), total)
        updated = _updated(response, kept, host, tail)
        window = sum(count(_as_text(updated[k])) for k in dict.fromkeys((*fields, host)))
        if window <= budget:
            break
        room -= window - budget  # redaction or a non-additive counter pushed it over: shrink and retry
    else:
        return Outcome(None, "over-budget", tool, session, total)
    if window >= total:
        return Outcome(None, "no-gain", tool, session, total)
    output = {"hookSpecificOutput": {"hookEventName": "PostToolUse", "updatedToolOutput": updated}}
    return Outcome(output, "replaced", tool, session, total, window, {**kept, "footer": tail})


def _updated(response: dict[str, Any], kept: dict[str, str], host: str, tail: str) -> dict[str, Any]:
    """The original response with the cut text fields and the footer; every other field unchanged."""
    updated = dict(response)
    if host == "filenames":
        names = [n for n in kept["filenames"].split("\n") if n]
        updated["filenames"] = [*names, tail.strip()]
        return updated
    for k, v in kept.items():
        updated[k] = v
    updated[host] = kept.get(host, "") + tail
    return updated


def _as_text(value: Any) -> str:
    return "\n".join(value) if isinstance(value, list) else value if isinstance(value, str) else ""


def _text_fields(tool: str, response: dict[str, Any]) -> dict[str, str] | None:
    if tool == "Bash":
        if response.get("isImage"):
            return None
        out = {k: response[k] for k in ("stdout", "stderr") if isinstance(response.get(k), str)}
        if "stdout" not in out or any("\x00" in v for v in out.values()):
            return None
        return {k: v for k, v in out.items() if v}
    content = response.get("content")
    if isinstance(content, str) and content:
        return None if "\x00" in content else {"content": content}
    names = response.get("filenames")
    if isinstance(names, list) and names and all(isinstance(n, str) and "\n" not in n for n in names):
        return {"filenames": "\n".join(names) + "\n"}
    return None


def _command(tool: str, payload: dict[str, Any]) -> str:
    tool_input = payload.get("tool_input") if isinstance(payload.get("tool_input"), dict) else {}
    key = "command" if tool == "Bash" else "pattern"
    value = tool_input.get(key)
    return value if isinstance(value, str) else ""


def _cut_fields(app: Context, selectors: list[Selector], fields: dict[str, str], sizes: dict[str, int],
                room: int) -> dict[str, str]:
    shares = _shares(sizes, max(room, 0))
    out: dict[str, str] = {}
    for k, text in fields.items():
        if sizes[k] <= shares[k]:
            out[k] = text
        elif k == "filenames":
            from memtree_plugins.selectors.lines import Pick, assemble, split

            # A file list keeps Claude Code's order (newest first); no omission markers inside a list.
            lines = split(text)
            picked = assemble(lines, [Pick(0, len(lines))], shares[k], app.count_tokens)
            out[k] = "".join(line for line in picked.splitlines(keepends=True) if not line.startswith("[… "))
        else:
            out[k] = cut(app, selectors, text, shares[k])
    return out


def _redacted(app: Context, text: str) -> str:
    # The slice shows what the node holds: secrets were redacted there, so they are here too.
    return app.redact(text)[0] if text else text


# -- accounting -----------------------------------------------------------------------------------------------
def account(app: Context, outcome: Outcome) -> None:
    """Count one replacement the model actually received (the reply reached a waiting hook)."""
    if outcome.output is None:
        return
    store = app.store
    saved = max(0, outcome.original_tokens - outcome.window_tokens)
    with store.tx():
        store.bump(f"replace:outputs:{outcome.tool}")
        store.bump(f"replace:original_tokens:{outcome.tool}", outcome.original_tokens)
        store.bump(f"replace:window_tokens:{outcome.tool}", outcome.window_tokens)
        store.bump(f"replace:saved_tokens:{outcome.tool}", saved)
        if outcome.session_id:
            store.bump(f"replace:session:{outcome.session_id}:outputs")
            store.bump(f"replace:session:{outcome.session_id}:saved_tokens", saved)


class SliceReplacer:
    """The built-in output replacer ``slice``: :func:`build`, counted by :func:`account` once delivered."""

    name = "slice"

    def replace(self, app: Context, payload: dict[str, Any], node_id: str, *, truncated: bool = False) -> Outcome:
        # The host asks only while the flag this plugin wrote is there; its own switch is checked too, so
        # the replacer never answers against the settings it was loaded with.
        if not replace_settings(app).enabled:
            return Outcome(None, "disabled")
        return build(app, payload, node_id, truncated=truncated)

    def delivered(self, app: Context, outcome: Replacement) -> None:
        if isinstance(outcome, Outcome):
            account(app, outcome)


def warm_up(app: Context) -> None:
    """Open the store and build one slice off the record, so the first real replacement is not the slow one
    (the synchronous hook waits at most ``capture.replace.timeoutMs``)."""
    try:
        app.store.counters("replace:")
        text = "".join(f"warm-up line {i}: error? no\n" for i in range(400))
        payload = {"hook_event_name": "PostToolUse", "tool_name": "Bash", "tool_input": {"command": "true"},
                   "tool_response": {"stdout": text, "stderr": "", "interrupted": False}}
        build(app, payload, "warm-up")
    except Exception:
        log.exception("replacement warm-up failed (the first replacement may be slow)")
