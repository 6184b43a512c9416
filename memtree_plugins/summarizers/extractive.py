"""A deterministic summary that needs nothing: counts, outlines from chunk metadata, first lines, error lines.

So compose's ``outline``/``mixed`` formats always have summaries to substitute, with no API key.

Nodes are listed by source, then by line number (``#L2-9`` before ``#L11-16``).  Structured data (JSON, YAML,
TOML, lock files, minified text) is described by its shape, one line per file (keys, item counts), never by
its first lines, which are brackets.  A summary is never longer than a quarter of what it summarises: lines
that do not fit are counted, not listed.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from memtree_plugins.lib.source_label import source_label

if TYPE_CHECKING:
    from memtree_core.context import Context

ERROR_RE = re.compile(r"\b(error|exception|traceback|failed|failure|fatal|panic|denied|not found)\b", re.I)
MAX_LINES = 60
LINE_CHARS = 160
SHARE = 4  # a summary is at most 1/SHARE of what it summarises
KEYS_SHOWN = 12
_RANGE = re.compile(r"#L(\d+)(?:-(\d+))?$")
_WORDY = re.compile(r"\w{3}")
_DATA_SUFFIXES = (".json", ".jsonl", ".ndjson", ".geojson", ".yaml", ".yml", ".toml", ".lock", ".sum", ".csv",
                  ".tsv", ".map", ".min.js", ".min.css", ".xml", ".plist")
_YAML_KEY = re.compile(r"^([A-Za-z_][\w.-]*)\s*:", re.M)
_TOML_TABLE = re.compile(r"^\[+([^\]\n]+)\]+", re.M)


def _first_line(text: str) -> str:
    """The first line that says something: brackets and punctuation alone (``{``, ``},``) do not."""
    for line in text.splitlines():
        if _WORDY.search(line):
            return line.strip()[:LINE_CHARS]
    return ""


def _span(node: Any) -> tuple[int, int] | None:
    meta = node.meta
    lines = meta.get("lines") or ([meta["start_line"], meta["end_line"]] if "start_line" in meta and
                                  "end_line" in meta else None)
    if lines:
        return int(lines[0]), int(lines[1])
    m = _RANGE.search(node.source_uri or "")
    return (int(m.group(1)), int(m.group(2) or m.group(1))) if m else None


def _label(node: Any, root: Any) -> str:
    # relative to the project root, like compose's headers: the same summary wherever the checkout lives
    where = source_label(node.source_uri, root) if node.source_uri else node.kind
    span = _span(node)
    if span and "#L" not in where:
        where += f" L{span[0]}-{span[1]}"
    return where


def _base(node: Any, root: Any) -> str:
    return source_label(node.source_uri, root).partition("#")[0] if node.source_uri else ""


def _is_data(base: str, text: str) -> bool:
    low = base.lower()
    if low.endswith(_DATA_SUFFIXES):
        return True
    lines = text.count("\n") + 1
    return len(text) > 2000 and len(text) / lines > 400  # minified: a few very long lines


def _keys(names: list[str]) -> str:
    shown = ", ".join(names[:KEYS_SHOWN])
    return shown + (f" (+{len(names) - KEYS_SHOWN} more)" if len(names) > KEYS_SHOWN else "")


def _shape(base: str, text: str) -> str:
    """What a structured file holds, in one line: its kind, keys or item count, size."""
    low, lines = base.lower(), text.count("\n") + 1
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        value = None
    if isinstance(value, dict):
        return f"JSON object, {len(value)} keys: {_keys([str(k) for k in value])}"
    if isinstance(value, list):
        kinds = Counter(type(v).__name__ for v in value)
        first = next((v for v in value if isinstance(v, dict)), None)
        keys = f"; items have keys {_keys([str(k) for k in first])}" if first else ""
        return f"JSON array of {len(value)} items ({', '.join(f'{k} {n}' for k, n in kinds.most_common())}){keys}"
    if low.endswith((".yaml", ".yml")):
        return f"YAML, {lines} lines, top-level keys: {_keys(list(dict.fromkeys(_YAML_KEY.findall(text))))}"
    if low.endswith(".toml"):
        return f"TOML, {lines} lines, tables: {_keys(list(dict.fromkeys(_TOML_TABLE.findall(text))))}"
    if low.endswith((".lock", ".sum")) or "lock" in low.rsplit("/", 1)[-1]:
        return f"lock file, {lines} lines"
    kind = low.rsplit(".", 1)[-1].upper() if "." in low.rsplit("/", 1)[-1] else "data"
    return f"{kind}, {lines} lines, {len(text):,} characters"


def _fit(lines: list[str], limit: int) -> list[str]:
    """The head and as many lines as fit in ``limit`` characters; the rest counted in a last line."""
    out, used = [lines[0][:limit]], len(lines[0])
    for i, line in enumerate(lines[1:], 1):
        if used + 1 + len(line) > limit:
            more = f"- ... {len(lines) - i} more lines"
            if used + 1 + len(more) <= limit:
                out.append(more)
            break
        out.append(line)
        used += 1 + len(line)
    return out


class ExtractiveSummarizer:
    name = "extractive"

    def available(self) -> tuple[bool, str]:
        return True, ""

    def summarize(self, nodes: Sequence[Any], app: Context) -> str:
        kinds = Counter(n.kind for n in nodes)
        total_bytes = sum(n.original_bytes or len(n.content.encode()) for n in nodes)
        head = (f"{len(nodes)} nodes (" + ", ".join(f"{k} {v}" for k, v in sorted(kinds.items()))
                + f"), {total_bytes} bytes")
        root = getattr(app, "project_root", None)
        by_source: dict[str, list[Any]] = {}
        for n in nodes:
            by_source.setdefault(_base(n, root), []).append(n)
        out: list[str] = []
        errors: list[str] = []
        for base in sorted(by_source):
            group = sorted(by_source[base], key=lambda n: ((_span(n) or (0, 0))[0], n.created_at))
            text = "\n".join(n.content for n in group)
            if base and _is_data(base, text):
                spans = [s for n in group if (s := _span(n))]
                where = f" L{spans[0][0]}-{spans[-1][1]}" if spans else ""
                out.append(f"- {base}{where} ({len(group)} chunk{'s' if len(group) != 1 else ''}): "
                           f"{_shape(base, text)}"[:LINE_CHARS * 2])
                continue
            for n in group:
                meta = n.meta
                outline = str(meta.get("outline") or "").strip()
                symbol = meta.get("symbol")
                line = outline.splitlines()[0][:LINE_CHARS] if outline else (
                    str(symbol) if symbol else _first_line(n.content))
                out.append(f"- {_label(n, root)}: {line}")
                for text_line in n.content.splitlines():
                    if ERROR_RE.search(text_line) and len(errors) < 10:
                        errors.append(f"  {text_line.strip()[:LINE_CHARS]}")
        if len(out) > MAX_LINES:
            out = out[:MAX_LINES] + [f"- ... and {len(out) - MAX_LINES} more"]
        if errors:
            out.append("error lines:")
            out.extend(dict.fromkeys(errors))
        limit = max(1, sum(len(n.content) for n in nodes) // SHARE)
        return "\n".join(_fit([head, *out], limit))
