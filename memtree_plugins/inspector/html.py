"""HTML building blocks: the page layout, escaping, links, tables, and stored text with its redaction marks.

Everything a store holds is untrusted text (what a tool printed, what a file said), so every value goes
through :func:`esc`; the pages carry no script at all and the server's Content-Security-Policy forbids
one, so a mistake here could at worst misdraw a page.
"""

from __future__ import annotations

import json
import re
import time
from html import escape
from typing import Any
from urllib.parse import urlencode

# The mark the redaction rules leave in place of a secret (memtree_core/daemon/redacting.py): the value itself was
# never stored, so the page can only show which rule took it.
REDACTION_MARK = re.compile(r"\[REDACTED:([^\]\s]{1,80})\]")
SNIPPET_MARK = re.compile("«(.*?)»", re.S)
NAV = (("/", "Tree"), ("/files", "Files"), ("/search", "Search"), ("/compose", "Compose"), ("/stats", "Stats"))

CSS = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 0; color: #1d1d1f; background: #fafafa; }
header { background: #23324d; color: #fff; padding: 8px 16px; display: flex; gap: 18px; align-items: baseline; }
header a { color: #cfe0ff; text-decoration: none; } header a.on { color: #fff; font-weight: 600; }
header .proj { margin-left: auto; color: #aab; font-size: 12px; }
main { padding: 12px 16px 40px; max-width: 1500px; }
.nw { white-space: nowrap; }
h1 { font-size: 20px; margin: 8px 0 12px; } h2 { font-size: 16px; margin: 22px 0 8px; }
table { border-collapse: collapse; margin: 4px 0 10px; } td, th { padding: 3px 8px; text-align: left;
  vertical-align: top; border-bottom: 1px solid #e4e4e8; } th { background: #eef0f5; font-weight: 600; }
td.n, th.n { text-align: right; font-variant-numeric: tabular-nums; }
pre, code { font: 12.5px/1.4 ui-monospace, SFMono-Regular, Menlo, monospace; }
pre.content { background: #fff; border: 1px solid #dcdce2; padding: 10px; white-space: pre-wrap;
  word-break: break-word; max-height: 70vh; overflow: auto; }
.redacted { background: #2b2b2b; color: #ffd166; border-radius: 3px; padding: 0 4px; font-weight: 600; }
mark { background: #ffe58a; }
.st { display: inline-block; border-radius: 9px; padding: 0 7px; font-size: 12px; color: #fff; }
.st-live { background: #2f8f4e; } .st-pending { background: #8a8a8a; } .st-stale { background: #c27b12; }
.st-superseded { background: #6a5acd; } .st-pruned { background: #b33; }
.kind { color: #555; font-size: 12px; } .muted { color: #777; } .empty { color: #777; font-style: italic; }
.note { background: #fff8e1; border-left: 3px solid #e0b000; padding: 6px 10px; margin: 8px 0; }
.error { background: #fdecea; border-left: 3px solid #c0392b; padding: 6px 10px; margin: 8px 0; }
.session { margin: 14px 0 4px; font-weight: 600; } ul.calls { margin: 2px 0 8px; padding-left: 18px; }
ul.calls li { margin: 3px 0; } ul.kids { margin: 2px 0; padding-left: 18px; font-size: 13px; }
form.q { background: #fff; border: 1px solid #dcdce2; padding: 8px 10px; display: flex; flex-wrap: wrap;
  gap: 10px; align-items: end; } form.q label { display: flex; flex-direction: column; font-size: 12px; color: #555; }
form.q input[type=text] { min-width: 260px; } textarea { font: 12.5px ui-monospace, monospace; }
svg.chart { background: #fff; border: 1px solid #e4e4e8; margin: 6px 0 14px; display: block; }
svg .ct { font: 600 13px system-ui, sans-serif; } svg .cl, svg .cv { font: 11px system-ui, sans-serif; fill: #333; }
a { color: #1f5fbf; } .pager { margin: 10px 0; }
"""


def esc(value: Any) -> str:
    return escape("" if value is None else str(value), quote=True)


def marked(text: str) -> str:
    """Stored text, escaped, with each ``[REDACTED:rule]`` mark drawn as a redaction."""
    out, at = [], 0
    for m in REDACTION_MARK.finditer(text):
        out.append(esc(text[at:m.start()]))
        out.append(f'<span class="redacted" title="redacted by rule {esc(m.group(1))}">'
                   f'[REDACTED:{esc(m.group(1))}]</span>')
        at = m.end()
    out.append(esc(text[at:]))
    return "".join(out)


def snippet(text: str) -> str:
    """A search snippet: the matches FTS marked «like this» highlighted, redaction marks drawn."""
    out, at = [], 0
    for m in SNIPPET_MARK.finditer(text):
        out.append(marked(text[at:m.start()]))
        out.append(f"<mark>{marked(m.group(1))}</mark>")
        at = m.end()
    out.append(marked(text[at:]))
    return "".join(out)


def when(ms: int | None) -> str:
    if not ms:
        return "—"
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ms / 1000))


def status(value: str) -> str:
    return f'<span class="st st-{esc(value)}">{esc(value)}</span>'


def href(path: str, **params: Any) -> str:
    """A link to ``path`` with the non-empty ``params`` as its query string, escaped for an attribute."""
    kept = {k: v for k, v in params.items() if v not in (None, "", False)}
    return esc(path + ("?" + urlencode(kept) if kept else ""))


def node_link(node_id: str, text: str | None = None) -> str:
    return f'<a href="{href("/node/" + node_id)}"><code>{esc(text or node_id)}</code></a>'


def table(head: list[str], rows: list[list[str]], numeric: set[int] | None = None) -> str:
    """A table of already-escaped cells; ``numeric`` columns are right-aligned."""
    numeric = numeric or set()
    th = "".join(f'<th{" class=n" if i in numeric else ""}>{h}</th>' for i, h in enumerate(head))
    body = "".join("<tr>" + "".join(f'<td{" class=n" if i in numeric else ""}>{c}</td>'
                                    for i, c in enumerate(r)) + "</tr>" for r in rows)
    return f"<table><thead><tr>{th}</tr></thead><tbody>{body}</tbody></table>"


def pretty_json(value: Any) -> str:
    return marked(json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True, default=str))


def notes(items: list[str], cls: str = "note") -> str:
    return "".join(f'<div class="{cls}">{esc(n)}</div>' for n in items)


def page(title: str, body: str, *, active: str, project: str) -> str:
    nav = "".join(f'<a href="{p}"{" class=on" if p == active else ""}>{esc(label)}</a>' for p, label in NAV)
    return (f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{esc(title)} · memtree</title>'
            f'<meta name="referrer" content="no-referrer"><link rel="stylesheet" href="/style.css"></head>'
            f'<body><header><strong>memtree</strong>{nav}<span class="proj">{esc(project)} · read-only</span>'
            f'</header><main><h1>{esc(title)}</h1>{body}</main></body></html>')
