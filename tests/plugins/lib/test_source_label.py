"""Files are named relative to the project root in compose headers and summaries, so the same store composes
the same text wherever the checkout lives."""

from __future__ import annotations

from memtree_core.store.source_uri import file_uri
from memtree_plugins.lib.source_label import source_label
from memtree_plugins.retrieval.compose import compose
from memtree_plugins.summarizers.extractive import ExtractiveSummarizer


def test_file_under_the_root_is_named_relative_to_it() -> None:
    assert source_label("file:///work/proj/pkg/mod.py#L3-9", "/work/proj") == "pkg/mod.py#L3-9"
    assert source_label("file:///work/proj/pkg/mod.py", "/work/proj/") == "pkg/mod.py"


def test_escaped_root_is_recognised() -> None:
    root = "/work/50% off #2"
    assert source_label(file_uri(f"{root}/a.py", 1, 2), root) == "a.py#L1-2"  # escaped form
    assert source_label(file_uri(f"{root}/b #3 50%.py"), root) == "b #3 50%.py"  # read back unescaped


def test_other_sources_keep_their_uri() -> None:
    assert source_label("file:///work/project-b/a.py", "/work/proj") == "file:///work/project-b/a.py"
    assert source_label("file:///work/proj", "/work/proj") == "file:///work/proj"
    assert source_label("tool:bash#toolu_1", "/work/proj") == "tool:bash#toolu_1"
    assert source_label("file:///work/proj/a.py", None) == "file:///work/proj/a.py"


def _chunk(app, name: str) -> str:
    return app.store.insert_node("file_chunk", "def f():\n    return 1\n", status_="live",
                                 source_uri=file_uri(f"{app.project_root}/src/{name}", 1, 2)).id


def test_compose_text_and_tokens_do_not_depend_on_where_the_checkout_is(app, home, tmp_path) -> None:
    from memtree_core.app import App

    near = _chunk(app, "m.py")
    result = compose(app, [near], budget_tokens=200, format="raw", depth=0)
    assert result.text.startswith(f"## {near} file_chunk src/m.py#L1-2\n")
    assert str(app.project_root) not in result.text

    deep = tmp_path / ("a-checkout-in-a-much-longer-directory-" * 4) / "proj"
    deep.mkdir(parents=True)
    other = App.open(deep)
    try:
        far = _chunk(other, "m.py")
        moved = compose(other, [far], budget_tokens=200, format="raw", depth=0)
    finally:
        other.close()
    assert moved.text.replace(far, near) == result.text
    assert moved.manifest.used == result.manifest.used


def test_extractive_summary_names_files_relative_to_the_root(app) -> None:
    body = "def f():\n" + "".join(f"    total_{i} = compute_total({i})\n" for i in range(20))
    node = app.store.insert_node("file_chunk", body, status_="live",
                                 source_uri=file_uri(f"{app.project_root}/src/n.py", 1, 2))
    text = ExtractiveSummarizer().summarize([node], app)
    assert "- src/n.py#L1-2:" in text
    assert str(app.project_root) not in text
