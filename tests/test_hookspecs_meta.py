"""Meta-tests in datasette's style: every hookspec is tested and documented, so docs cannot drift."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest

from memtree_core import hookspecs

REPO = Path(__file__).resolve().parent.parent
HOOKS = sorted(n for n, f in vars(hookspecs).items() if n.startswith("memtree_") and inspect.isfunction(f))


def signature_line(name: str) -> str:
    fn = getattr(hookspecs, name)
    params = ", ".join(inspect.signature(fn).parameters)
    return f"{name}({params})"


def test_there_are_hooks() -> None:
    assert {"memtree_register_chunkers", "memtree_register_filters", "memtree_register_redaction_rules",
            "memtree_register_walkers", "memtree_register_tools", "memtree_register_embedders",
            "memtree_register_summarizers", "memtree_register_rankers", "memtree_token_counter"} <= set(HOOKS)


@pytest.mark.parametrize("name", HOOKS)
def test_hook_has_a_reference_docstring(name: str) -> None:
    doc = inspect.getdoc(getattr(hookspecs, name)) or ""
    assert len(doc) > 40 and ":param" in doc


@pytest.mark.parametrize("name", HOOKS)
def test_hook_is_documented_in_the_readme(name: str) -> None:
    readme = (REPO / "README.md").read_text()
    assert f"`{signature_line(name)}`" in readme, f"README.md should document `{signature_line(name)}`"


@pytest.mark.parametrize("name", HOOKS)
def test_hook_has_a_test(name: str) -> None:
    tests = [p for p in (REPO / "tests").glob("test_*.py") if p.name != Path(__file__).name]
    assert any(name in p.read_text() for p in tests), f"no test implements or calls {name}"


@pytest.mark.parametrize("name", HOOKS)
def test_builtins_implement_the_hook_as_plugins(name: str) -> None:
    """Every extension point has a built-in plugin using it (built-ins are plugins like any other)."""
    from memtree_core.plugins import build
    from memtree_core.settings import Settings

    plugins = build(Settings(), {"MEMTREE_LOAD_PLUGINS": ""})
    impls = getattr(plugins.pm.hook, name).get_hookimpls()
    assert any(not i.plugin_name.startswith("extra") for i in impls), f"no built-in implements {name}"


def test_readme_hook_reference_is_generated_from_the_docstrings() -> None:
    from memtree_core.hookdoc import render

    readme = (REPO / "README.md").read_text()
    begin = readme.index("<!-- hookspecs:begin")
    section = readme[readme.index("\n", begin) + 1:readme.index("<!-- hookspecs:end -->")]
    assert section == render(), "run: python -m memtree_core.hookdoc, and paste it into README.md"
