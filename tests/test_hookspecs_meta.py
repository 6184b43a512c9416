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
            "memtree_register_summarizers", "memtree_register_rankers", "memtree_token_counter",
            "memtree_register_retrievers", "memtree_register_capture_adapters",
            "memtree_register_output_replacers", "memtree_register_command_policies"} <= set(HOOKS)


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
    tests += list((REPO / "tests" / "helpers").glob("*.py"))  # plugins the tests install live there too
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
    # The checkout's examples, not the installed package's neighbours (tox installs a wheel, without them).
    assert section == render(REPO / "examples" / "hooks"), \
        "run: python -m memtree_core.hookdoc examples/hooks, and paste it into README.md"


@pytest.mark.parametrize("name", HOOKS)
def test_every_hook_has_an_example_that_loads_as_a_plugin(name: str, monkeypatch: pytest.MonkeyPatch,
                                                          tmp_path: Path) -> None:
    """The README's example for each hook (``examples/hooks/<hook>.py``, generated into the hook reference) is a
    working plugin: it loads, its hook implementation is called, and what it registers or answers reaches the
    plugin set."""
    import json
    import os
    import sys
    import types

    from memtree_core.daemon.ingest import Refused
    from memtree_core.hookdoc import example
    from memtree_core.plugins import REGISTRY_HOOKS, build
    from memtree_core.settings import Settings

    code = example(name, REPO / "examples" / "hooks")
    assert code is not None, f"write examples/hooks/{name}.py: a small plugin implementing {name}"
    module = types.ModuleType(f"example_{name}")
    monkeypatch.setitem(sys.modules, module.__name__, module)  # as an imported plugin module is (pydantic looks)
    exec(compile(code, f"examples/hooks/{name}.py", "exec"), module.__dict__)
    plugins = build(Settings(), {"MEMTREE_LOAD_PLUGINS": ""}, extra=[("example", module)])
    assert plugins.info("example").status == "loaded", plugins.info("example").error
    assert "example" in [i.plugin_name for i in getattr(plugins.pm.hook, name).get_hookimpls()]
    kind = next((k for k, hook in REGISTRY_HOOKS.items() if hook == name), None)
    if kind is not None:
        assert any(e.plugin == "example" for e in plugins.registries[kind].entries()), f"{name} registered nothing"
    elif name == "memtree_token_counter":
        assert plugins.token_counter.count("two words") >= 2 and plugins.token_counter.name == "words"
    elif name == "memtree_settings_model":
        assert plugins.settings_models["example"]().max_hits == 10
    elif name == "memtree_prepare_capture":
        with pytest.raises(Refused, match="lockfile"):
            plugins.pm.hook.memtree_prepare_capture(app=None, payload={"tool_input": {"file_path": "/w/uv.lock"}})
    elif name == "memtree_store_capture":
        from memtree_core.forwarder.paths import ProjectPaths
        from memtree_core.types import Capture, PreparedCapture

        app = types.SimpleNamespace(paths=ProjectPaths.for_hash(tmp_path, "example"))
        app.paths.dir.mkdir()
        prepared = PreparedCapture([Capture("tool_output", "ok\n", "bash://toolu_1")], {})
        # The example defers, and with the built-ins left out nobody else answers.
        alone = build(Settings(), {"MEMTREE_LOAD_PLUGINS": ""}, builtins={}, extra=[("example", module)])
        assert alone.pm.hook.memtree_store_capture(app=app, payload={"tool_name": "Bash"}, prepared=prepared,
                                                   replayed=False) is None
        assert [json.loads(line) for line in (app.paths.dir / "captures.jsonl").read_text().splitlines()] == [
            {"tool": "Bash", "uri": "bash://toolu_1", "bytes": 3, "replayed": False}]
    elif name in ("memtree_daemon_started", "memtree_daemon_stopping"):
        from memtree_core.forwarder.paths import ProjectPaths

        app = types.SimpleNamespace(paths=ProjectPaths.for_hash(tmp_path, "example"))
        app.paths.dir.mkdir()
        (app.paths.dir / "statusbar.pid").write_text("1\n")  # what a started daemon left, for the stop
        # Only the example: the built-ins' stopping hook would end this test process's tool calls for good.
        alone = build(Settings(), {"MEMTREE_LOAD_PLUGINS": ""}, builtins={}, extra=[("example", module)])
        alone.notify(name, app=app)
        alone.notify(name, app=app)  # the stopping hook runs twice; the started one is idempotent here
        assert (app.paths.dir / "statusbar.pid").exists() == (name == "memtree_daemon_started")
        if name == "memtree_daemon_started":
            assert (app.paths.dir / "statusbar.pid").read_text() == f"{os.getpid()}\n"
    else:
        raise AssertionError(f"say here what {name}'s example must do")


def _plugin_imports(path: Path) -> list[tuple[int, str]]:
    """Every import of memtree_plugins in a module, lazy ones (inside functions) included."""
    import ast

    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [f"{node.module}:{a.name}" for a in node.names]
        else:
            continue
        found += [(node.lineno, n) for n in names if n.split(":")[0].split(".")[0] == "memtree_plugins"]
    return found


# Reading the list of built-in plugins is how the host finds them; anything else goes through the plugin set,
# so that disabling a plugin disables its behaviour.
ALLOWED_PLUGIN_IMPORTS = {("memtree_core/plugins.py", "memtree_plugins:BUILTINS")}


def test_the_core_imports_no_plugin() -> None:
    found = {(str(p.relative_to(REPO)), name, line)
             for p in sorted((REPO / "memtree_core").rglob("*.py")) for line, name in _plugin_imports(p)}
    extra = sorted(f"{path}:{line} imports {name}" for path, name, line in found
                   if (path, name) not in ALLOWED_PLUGIN_IMPORTS)
    assert not extra, "memtree_core must reach plugins through the plugin set:\n" + "\n".join(extra)
    assert {(path, name) for path, name, _ in found} == ALLOWED_PLUGIN_IMPORTS  # the check sees imports


def test_the_import_check_sees_lazy_and_aliased_imports(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("import os\n\ndef f():\n    import memtree_plugins.tokens as t\n"
                      "    from memtree_plugins.selectors import lines\n    from . import memtree_plugins\n")
    assert _plugin_imports(module) == [(4, "memtree_plugins.tokens"), (5, "memtree_plugins.selectors:lines")]


def _import_graph() -> dict[str, set[str]]:
    """Module -> the memtree modules it imports, lazy imports included, ``if TYPE_CHECKING:`` ones not."""
    import ast

    modules = {}
    for package in ("memtree_core", "memtree_plugins"):
        for path in (REPO / package).rglob("*.py"):
            parts = list(path.relative_to(REPO).with_suffix("").parts)
            modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for module, path in modules.items():
        tree = ast.parse(path.read_text(), str(path))
        typing_only = {id(n) for branch in ast.walk(tree)
                       if isinstance(branch, ast.If) and "TYPE_CHECKING" in ast.unparse(branch.test)
                       for stmt in branch.body for n in ast.walk(stmt)}
        for node in ast.walk(tree):
            if id(node) in typing_only:
                continue
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                targets = [f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in modules else node.module
                           for a in node.names]
            else:
                continue
            for target in targets:
                while target and target not in modules:
                    target = target.rpartition(".")[0]
                if target and target != module and not module.startswith(target + "."):
                    graph[module].add(target)  # (a package's own __init__ is not a cycle back)
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected groups of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[frozenset[str]] = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            v, edges = work[-1]
            w = next(edges, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                group = set()
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    group.add(w)
                    if w == v:
                        break
                if len(group) > 1:
                    found.append(frozenset(group))
    return found


def test_no_import_cycles() -> None:
    """No two memtree modules import each other, even through a chain and even lazily (inside a function):
    a cycle means two modules are one job split in two, or a host that reaches back into its plugins."""
    cycles = sorted(sorted(c) for c in _cycles(_import_graph()))
    assert not cycles, "import cycles (lazy imports included):\n" + "\n".join(" <-> ".join(c) for c in cycles)


def test_the_cycle_check_finds_a_lazy_cycle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert _cycles(graph) == [frozenset({"a", "b", "c"})]
