"""Meta-tests of the plugin context: plugins get a narrow :class:`Context`, not the whole ``App``, read the plugin
set through its :class:`PluginsView`, and use only what the store's protocol offers (plugins write their own SQL over it)."""

from __future__ import annotations

import ast
import sys
from pathlib import Path
from typing import Any

import pytest

from memtree_core.app import App
from memtree_core.context import Context, PluginsView, StoreAccess
from memtree_core.store import now_ms

REPO = Path(__file__).resolve().parents[2]
PLUGINS = REPO / "memtree_plugins"
EXAMPLES = REPO / "examples"  # the example plugins README and its hook reference show

def _plugin_modules() -> list[tuple[str, Path]]:
    return [(str(p.relative_to(PLUGINS)), p) for p in sorted(PLUGINS.rglob("*.py"))]


# -- the Context protocol --------------------------------------------------------------------------------------
def _members(protocol: type) -> set[str]:
    return {n for n in vars(protocol) if not n.startswith("_")} | set(protocol.__annotations__)


CONTEXT = _members(Context)
STORE = _members(StoreAccess)


def _context_functions(tree: ast.AST) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    return [fn for fn in ast.walk(tree) if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef))
            and any(a.arg == "app" for a in (*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs))]


def test_plugins_annotate_app_as_context_and_use_only_what_it_offers() -> None:
    problems = []
    for rel, path in _plugin_modules():
        for fn in _context_functions(ast.parse(path.read_text(), rel)):
            arg = next(a for a in (*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs) if a.arg == "app")
            if arg.annotation is None or ast.unparse(arg.annotation) in ("Any", "App", "object"):
                note = ast.unparse(arg.annotation) if arg.annotation else "no annotation"
                problems.append(f"{rel}:{fn.lineno} {fn.name}(app: {note})")
                continue
            if ast.unparse(arg.annotation) != "Context":
                continue  # another kind of app (the inspector's ASGI app)
            for node in ast.walk(fn):
                if not isinstance(node, ast.Attribute):
                    continue
                if isinstance(node.value, ast.Name) and node.value.id == "app" and node.attr not in CONTEXT:
                    problems.append(f"{rel}:{node.lineno} app.{node.attr} is not in Context")
                on_store = (isinstance(node.value, ast.Attribute) and node.value.attr == "store"
                            and isinstance(node.value.value, ast.Name) and node.value.value.id == "app")
                if on_store and node.attr not in STORE:
                    problems.append(f"{rel}:{node.lineno} app.store.{node.attr} is not in StoreAccess")
    assert not problems, "plugins get a Context (memtree_core/context.py):\n" + "\n".join(problems)


# -- the plugin set, through its view ---------------------------------------------------------------------------
PLUGINS_VIEW = _members(PluginsView)
# Where a plugin holds the plugin set: ``app.plugins`` (``ctx.``, ``self.``, ``self.app.`` too), or a parameter
# named ``plugins`` or typed PluginsView that it was passed on to.
_HOLDERS = ("app", "ctx", "context", "self")


def _plugin_sources() -> list[tuple[str, Path]]:
    return [(f"{root.name}/{p.relative_to(root)}", p) for root in (PLUGINS, EXAMPLES)
            for p in sorted(root.rglob("*.py"))]


def plugin_set_uses(source: str, name: str = "<module>") -> list[tuple[int, str]]:
    """What ``source`` reads off the plugin set that :class:`PluginsView` does not offer, and every use of the
    whole ``PluginSet`` type (a plugin takes the view): ``(line, what)``."""
    tree = ast.parse(source, name)
    held = {"plugins"} | {a.arg for fn in ast.walk(tree) if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef))
                          for a in (*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs)
                          if a.annotation is not None and ast.unparse(a.annotation).strip("'\"") == "PluginsView"}

    def plugin_set(node: ast.expr) -> bool:
        if isinstance(node, ast.Name):
            return node.id in held
        if not (isinstance(node, ast.Attribute) and node.attr == "plugins"):
            return False
        on = node.value  # app.plugins, or self.app.plugins (not settings.plugins, the settings section)
        return (isinstance(on, ast.Name) and on.id in _HOLDERS) or (
            isinstance(on, ast.Attribute) and on.attr in ("app", "ctx") and isinstance(on.value, ast.Name))

    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and plugin_set(node.value) and node.attr not in PLUGINS_VIEW:
            found.append((node.lineno, f"{ast.unparse(node.value)}.{node.attr}"))
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr"
              and node.args and plugin_set(node.args[0])):
            attr = node.args[1] if len(node.args) > 1 else None
            if not (isinstance(attr, ast.Constant) and attr.value in PLUGINS_VIEW):
                found.append((node.lineno, ast.unparse(node)))
        elif isinstance(node, ast.ImportFrom) and node.module == "memtree_core.plugins" and any(
                a.name == "PluginSet" for a in node.names):
            found.append((node.lineno, "PluginSet imported"))
    return sorted(set(found))


def test_plugins_read_only_what_the_plugins_view_offers() -> None:
    problems = [f"{rel}:{line}: {what}" for rel, path in _plugin_sources()
                for line, what in plugin_set_uses(path.read_text(), rel)]
    assert not problems, ("plugins read the plugin set through PluginsView (memtree_core/context.py): the "
                          "registries, token_counter, report, failures; the hooks are the host's to call:\n"
                          + "\n".join(problems))


def test_the_plugins_view_check_sees_the_manager_notify_and_the_whole_plugin_set() -> None:
    source = ('from memtree_core.plugins import PluginSet\n'
              'def f(app, plugins, settings):\n'
              '    app.plugins.walkers.get("filter")\n'
              '    app.plugins.pm.hook.memtree_daemon_started(app=app)\n'
              '    self.app.plugins.notify("memtree_daemon_stopping", app=app)\n'
              '    plugins.hook\n'
              '    settings.plugins.disable\n'
              '    getattr(app.plugins, "settings_models")\n'
              'def g(registries: PluginsView):\n'
              '    return registries.info("x"), registries.tools\n')
    assert plugin_set_uses(source) == [
        (1, "PluginSet imported"), (4, "app.plugins.pm"), (5, "self.app.plugins.notify"), (6, "plugins.hook"),
        (8, "getattr(app.plugins, 'settings_models')"), (10, "registries.info")]


def test_the_plugins_view_check_fails_on_a_plugin_that_calls_hooks(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """The structure test itself fails when a plugin reaches past the view, naming the file and line."""
    fake = tmp_path / "memtree_plugins"
    (fake / "walkers").mkdir(parents=True)
    (fake / "walkers" / "sneaky.py").write_text(
        "def run(app):\n    for walker in app.plugins.walkers:\n"
        "        app.plugins.pm.hook.memtree_daemon_started(app=app)\n")
    monkeypatch.setattr(sys.modules[__name__], "PLUGINS", fake)
    monkeypatch.setattr(sys.modules[__name__], "EXAMPLES", tmp_path / "examples")
    with pytest.raises(AssertionError, match=r"memtree_plugins/walkers/sneaky.py:3: app.plugins.pm") as failed:
        test_plugins_read_only_what_the_plugins_view_offers()
    assert "sneaky.py:2" not in str(failed.value)  # the registries are the view's


def test_plugins_call_only_the_named_store_methods() -> None:
    """Whatever a plugin calls on a store (``app.store.x`` or a local ``store.x``) is in StoreAccess."""
    problems = []
    for rel, path in _plugin_modules():
        for node in ast.walk(ast.parse(path.read_text(), rel)):
            if not isinstance(node, ast.Attribute) or node.attr in STORE:
                continue
            v = node.value
            if (isinstance(v, ast.Name) and v.id == "store") or (
                    isinstance(v, ast.Attribute) and v.attr == "store" and isinstance(v.value, ast.Name)
                    and v.value.id in ("app", "ctx", "self")):
                problems.append(f"{rel}:{node.lineno} store.{node.attr}")
    assert not problems, "not a named store method (memtree_core/context.py StoreAccess):\n" + "\n".join(problems)


def test_store_access_lists_every_named_store_method() -> None:
    """A named method added to the store is part of what plugins may call (and nothing else is)."""
    from memtree_core.store.keywords import KeywordSearch
    from memtree_core.store.upkeep import Upkeep
    from memtree_core.store.vectors import Vectors

    named = {n for mixin in (Upkeep, KeywordSearch, Vectors) for n in vars(mixin) if not n.startswith("_")}
    assert named - STORE == set()
    assert not {"conn", "route"} & STORE


# Plugin modules that use App itself, and why; every other one gets a Context.
APP_USERS = {
    "inspector/readonly.py": "ReadOnlyApp: the inspector's App with the store opened read-only",
    "commands/demo.py": "memtree demo opens an App of its own scratch project",
    "commands/store.py": "memtree store migrate opens the project twice: on its local store and on the server",
}


def test_only_the_declared_plugin_modules_import_app() -> None:
    found = set()
    for rel, path in _plugin_modules():
        for node in ast.walk(ast.parse(path.read_text(), rel)):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            if any(n == "memtree_core.app" or n.startswith("memtree_core.app.") for n in names):
                found.add(rel)
    assert found == set(APP_USERS), "plugins get a Context (memtree_core/context.py), not App"


def test_app_is_a_context_and_its_store_a_store_access(home: Path, project: Path) -> None:
    app = App.open(project)
    try:
        assert isinstance(app, Context)
        assert isinstance(app.store, StoreAccess)
        missing = sorted(n for n in STORE if not hasattr(app.store, n))
        assert not missing
    finally:
        app.close()


def test_the_plugin_set_is_a_plugins_view_without_its_manager(app: App) -> None:
    """App's PluginSet satisfies the view as it is; the view leaves out pluggy's manager and the build's parts."""
    assert isinstance(app.plugins, PluginsView)
    missing = sorted(n for n in PLUGINS_VIEW if not hasattr(app.plugins, n))
    assert not missing
    assert not {"pm", "hook", "notify", "info", "settings_models", "settings_sections", "plugin_settings",
                "redaction_rules", "command_policies", "commands"} & PLUGINS_VIEW


class OnlyContext:
    """Exactly what :class:`Context` lists of a real App, and nothing else (no close, no damaged, no conn, no
    plugin manager)."""

    def __init__(self, app: App) -> None:
        object.__setattr__(self, "_app", app)
        object.__setattr__(self, "_narrowed", {"store": OnlyStore(app.store), "plugins": OnlyPlugins(app.plugins)})

    def __getattr__(self, name: str) -> Any:
        if name not in CONTEXT:
            raise AttributeError(f"{name} is not part of Context")
        return self._narrowed[name] if name in self._narrowed else getattr(self._app, name)


class OnlyPlugins:
    def __init__(self, plugins: Any) -> None:
        object.__setattr__(self, "_plugins", plugins)

    def __getattr__(self, name: str) -> Any:
        if name not in PLUGINS_VIEW:
            raise AttributeError(f"plugins.{name} is not part of PluginsView")
        return getattr(self._plugins, name)


class OnlyStore:
    def __init__(self, store: Any) -> None:
        object.__setattr__(self, "_store", store)

    def __getattr__(self, name: str) -> Any:
        if name not in STORE:
            raise AttributeError(f"store.{name} is not part of StoreAccess")
        return getattr(self._store, name)


def test_the_context_stand_in_refuses_what_context_does_not_offer(app: App) -> None:
    ctx = OnlyContext(app)
    assert isinstance(ctx, Context) and isinstance(ctx.store, StoreAccess)
    for name in ("close", "damaged", "mark_damaged"):
        with pytest.raises(AttributeError):
            getattr(ctx, name)
    for name in ("conn", "route"):
        with pytest.raises(AttributeError):
            getattr(ctx.store, name)
    assert isinstance(ctx.plugins, PluginsView)
    for name in ("pm", "notify", "info", "plugin_settings", "command_policies"):
        with pytest.raises(AttributeError):
            getattr(ctx.plugins, name)


def test_the_inspector_reopens_the_hosts_app_not_a_context(app: App) -> None:
    """The inspector's read-only App takes the host's whole plugin set, which a Context offers only a view of."""
    from memtree_plugins.inspector.readonly import ReadOnlyApp

    with pytest.raises(TypeError, match=r"\(OnlyContext given\)"):
        ReadOnlyApp.of(OnlyContext(app))
    assert ReadOnlyApp.of(app).plugins is app.plugins


TEXT = "pytest collected 12 items; test_store.py::test_open PASSED and more real words "  # > 50 bytes
DAY = 24 * 3_600_000


def test_built_in_walkers_run_with_nothing_but_a_context(app: App) -> None:
    s = app.store
    kept = s.insert_node("tool_output", TEXT)
    tiny = s.insert_node("tool_output", "ok\n")
    ctx = OnlyContext(app)
    walkers = app.plugins.walkers
    assert walkers.get("filter").has_work(ctx)
    assert walkers.get("filter").run(ctx) == {"seen": 2, "kept": 1, "dropped": 1}
    assert (s.get_node(kept.id).status, s.get_node(tiny.id).status) == ("live", "pruned")
    assert not walkers.get("filter").has_work(ctx)

    # the pruner: a stale node past its horizon is pruned, a pruned one past the audit horizon deleted
    old = s.insert_node("tool_output", TEXT + "old", status_="live")
    s.transition([old.id], "stale", "test")
    with s.tx():
        s.conn.execute("UPDATE nodes SET updated_at = ? WHERE id = ?", (now_ms() - 400 * DAY, old.id))
        s.conn.execute("UPDATE nodes SET updated_at = ? WHERE id = ?", (now_ms() - 400 * DAY, tiny.id))
    counters = walkers.get("pruner").run(ctx)
    assert counters["pruned_stale"] == 1 and counters["deleted_rows"] == 1
    assert s.get_node(tiny.id) is None and s.get_node(old.id).status == "pruned"
    assert s.get_node(kept.id).status == "live"


def test_the_example_retriever_runs_with_nothing_but_a_context(app: App) -> None:
    """README's retriever example runs with nothing but a Context: its own query over the search filter it is given."""
    import importlib.util

    from memtree_plugins.retrieval.search import Filters

    path = REPO / "examples" / "hooks" / "memtree_register_retrievers.py"
    spec = importlib.util.spec_from_file_location("example_retriever", path)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    s = app.store
    first = s.insert_node("note", "first note", status_="live")
    second = s.insert_node("note", "second note", status_="live")
    gone = s.insert_node("note", "pruned note", status_="live")
    s.transition([gone.id], "pruned", "test")
    got = module.Newest().retrieve(OnlyContext(app), "anything", 5, Filters.build(kind="note"))
    assert [i for i, _ in got] == [second.id, first.id]


# -- what plugins are handed at run time ---------------------------------------------------------------------
def _public(cls: type) -> set[str]:
    return {n for n in dir(cls) if not n.startswith("_")}


def test_plugins_are_handed_a_host_context_with_exactly_what_context_declares(app: App) -> None:
    from memtree_core.app import HostContext, HostPlugins

    assert _public(HostContext) == CONTEXT
    assert _public(HostPlugins) == PLUGINS_VIEW
    ctx = app.context
    assert isinstance(ctx, HostContext) and isinstance(ctx, Context) and isinstance(ctx.plugins, PluginsView)
    assert app.context is ctx  # one per App
    assert ctx.store is app.store  # handed through as it is
    for name in ("close", "damaged", "mark_damaged", "open", "context"):
        assert not hasattr(ctx, name), name
    for name in ("pm", "notify", "info", "plugin_settings", "command_policies", "item_failed"):
        assert not hasattr(ctx.plugins, name), name
    with pytest.raises(TypeError):
        ctx.plugins.registries["chunkers"] = None  # type: ignore[index]


# -- every member the host reads of an item is declared -------------------------------------------------------
# getattr/hasattr reads by name, in the host and the built-in plugins, of something other than a registered item
# or the context: the name, and what it is read on.
NOT_ITEM_READS = {
    "reason": "an exception (urllib's URLError)",
    "entry": "a threading.local",
    "decorator_list": "an ast node",
    "text": "an MCP content block",
    "EXAMPLE": "a command handler module (memtree_core.command)",
    "PROJECT_HELP": "a command handler module (memtree_core.command)",
    "PROJECT_MAY_BE_GONE": "a command handler module (memtree_core.command)",
    "memtree_settings_model": "a plugin module (the hook)",
    "last_activity": "the daemon's ingest server",
    "damaged": "the host's App (host code, not a plugin's)",
    "context": "the host's App: what plugins are handed",
    "SO_PEERCRED": "the socket module",
    "O_NOFOLLOW": "the os module",
    "O_NONBLOCK": "the os module",
    "O_CLOEXEC": "the os module",
    "fork": "the os module",
    "mark_damaged": "the host's App (host code, not a plugin's)",
    "enable_load_extension": "a sqlite3 connection",
    "bitwise_count": "numpy",
    "render": "a tool's pydantic result model",
    "memtree_spec": "a hookspec function",
    "__name__": "a function",
    "fd": "the forwarder's handle on a daemon it starts (a status pipe, or a Popen)",
    "close": "the forwarder's handle on a daemon it starts (a status pipe, or a Popen)",
    "search": "a plugin's settings model (the inspector reads the retrieval plugin's search.ranker)",
    "ranker": "a plugin's settings section (the inspector reads the retrieval plugin's search.ranker)",
}


def _declared_members() -> set[str]:
    import dataclasses
    import inspect
    import typing

    from memtree_core import context, types

    names: set[str] = set()
    for module in (types, context):
        for _name, obj in vars(module).items():
            if inspect.isclass(obj) and obj.__module__ == module.__name__:
                if typing.Protocol in obj.__mro__:
                    names |= {n for n in vars(obj) if not n.startswith("_")} | set(obj.__annotations__)
                elif dataclasses.is_dataclass(obj):
                    names |= {f.name for f in dataclasses.fields(obj)}
    return names


def _reads_by_name() -> list[tuple[str, int, str]]:
    reads = []
    for root in (REPO / "memtree_core", PLUGINS):
        for path in sorted(root.rglob("*.py")):
            rel = str(path.relative_to(REPO))
            for node in ast.walk(ast.parse(path.read_text(), rel)):
                if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                        and node.func.id in ("getattr", "hasattr") and len(node.args) >= 2
                        and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str)):
                    reads.append((rel, node.lineno, node.args[1].value))
    return reads


def test_every_member_read_by_name_is_declared_in_a_protocol() -> None:
    """An optional member the host (or a built-in plugin) looks for on an item is part of the contract: it is
    declared in ``memtree_core/types.py`` (or ``context.py``), so a third-party author can know of it."""
    declared = _declared_members()
    undeclared = [f"{rel}:{line} {name}" for rel, line, name in _reads_by_name()
                  if name not in declared and name not in NOT_ITEM_READS]
    assert not undeclared, "read by name but declared in no protocol (memtree_core/types.py):\n" + "\n".join(undeclared)


def test_the_optional_members_once_read_undeclared_are_declared() -> None:
    from memtree_core import types

    assert "reads_query" in types.ReadsQuery.__annotations__
    assert "result" in vars(types.BuildsResult)
    assert "configure" in vars(types.Configurable)
    assert "availability" in vars(types.ReportsAvailability)
    assert "tiles" in vars(types) and "tiling rule" in (types.Chunker.__doc__ or "")
