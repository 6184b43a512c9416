"""The extractive summary: sources in line order, structured data by its shape, never over a quarter."""

from __future__ import annotations

import json
from pathlib import Path

from memtree_core.app import App
from memtree_plugins.summarizers.extractive import ExtractiveSummarizer


def _chunks(app: App, rel: str, text: str, size: int) -> list:
    lines = text.splitlines(keepends=True)
    uri = f"file://{app.project_root}/{rel}"
    out = []
    for start in range(0, len(lines), size):
        end = min(len(lines), start + size)
        out.append(app.store.insert_node("file_chunk", "".join(lines[start:end]), status_="live",
                                         source_uri=f"{uri}#L{start + 1}-{end}",
                                         metadata={"lines": [start + 1, end]}))
    return out


def test_ranges_are_in_line_order_not_string_order(home: Path, project: Path) -> None:
    app = App.open(project)
    try:
        code = "".join(f"def handler_{i}(request):\n    return respond(request, {i})\n\n" for i in range(40))
        nodes = _chunks(app, "src/api.py", code, 9)
        text = ExtractiveSummarizer().summarize(list(reversed(nodes)), app)
    finally:
        app.close()
    starts = [int(line.split("#L")[1].split("-")[0]) for line in text.splitlines() if "#L" in line]
    assert starts == sorted(starts) and starts[:3] == [1, 10, 19]


def test_json_is_summarised_by_its_shape_within_a_quarter(home: Path, project: Path) -> None:
    data = {f"entry_{i}": {"url": f"https://example.org/{i}", "tags": ["a", "b"], "size": i} for i in range(300)}
    app = App.open(project)
    try:
        nodes = _chunks(app, "data/entries.json", json.dumps(data, indent=2), 200)
        text = ExtractiveSummarizer().summarize(nodes, app)
    finally:
        app.close()
    total = sum(len(n.content) for n in nodes)
    assert len(text) <= total // 4
    lines = text.splitlines()
    assert len(lines) == 2 and "data/entries.json L1-" in lines[1]
    assert "JSON object, 300 keys: entry_0, entry_1" in lines[1]
    assert not any(line.strip(" -") in ("{", "},", "[", "]") for line in lines)


def test_a_summary_never_exceeds_a_quarter_of_its_input(home: Path, project: Path) -> None:
    app = App.open(project)
    try:
        nodes = [app.store.insert_node("tool_output", f"step {i} ERROR: thing {i} failed\n", status_="live")
                 for i in range(30)]
        text = ExtractiveSummarizer().summarize(nodes, app)
    finally:
        app.close()
    assert len(text) <= sum(len(n.content) for n in nodes) // 4
    assert text.startswith("30 nodes (tool_output 30)")
