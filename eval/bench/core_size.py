"""The shape of the house, from the source alone (docs/architecture.md#parts).

Prints, each against its goal:

1. the plugin host: non-blank lines of ``memtree_core`` without its subsystems (``store/``, ``daemon/``,
   ``forwarder/``), plus import cycles among memtree's modules and imports from the core into a plugin;
2. the forwarder: non-blank lines of ``memtree_core/forwarder/`` and its imports of anything but the
   standard library and itself;
3. the store API: the public methods of the store protocol plugins get (``StoreAccess``) and of ``Store``,
   and which of them a single plugin uses;
4. imports between built-in plugins (``memtree_plugins/<a>`` importing ``memtree_plugins.<b>``; ``lib/`` is
   shared code, not a plugin, and must register no hooks).

    python -m eval.bench core_size
"""

from __future__ import annotations

import ast
import sys
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CORE = REPO / "memtree_core"
PLUGINS = REPO / "memtree_plugins"
SUBSYSTEMS = ("store", "daemon", "forwarder")
HOST_GOAL, FORWARDER_GOAL, STORE_GOAL = 2_500, 800, 25


def nonblank(path: Path) -> int:
    return sum(1 for line in path.read_text(encoding="utf-8").splitlines() if line.strip())


def module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph() -> dict[str, set[str]]:
    """Module -> the memtree modules it imports, lazy imports included, ``if TYPE_CHECKING:`` ones not; a
    package's own ``__init__`` is not an edge back from its modules."""
    modules = {module_name(p): p for root in (CORE, PLUGINS) for p in root.rglob("*.py")}
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for module, path in modules.items():
        for target in imported(path, modules):
            while target and target not in modules:
                target = target.rpartition(".")[0]
            if target and target != module and not module.startswith(target + "."):
                graph[module].add(target)
    return graph


def imported(path: Path, modules: dict[str, Path] | None = None) -> list[str]:
    """The absolute names ``path`` imports outside ``if TYPE_CHECKING:`` (``from a import b`` names ``a.b``
    when that is one of ``modules``, else ``a``)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    typing_only = {id(n) for branch in ast.walk(tree)
                   if isinstance(branch, ast.If) and "TYPE_CHECKING" in ast.unparse(branch.test)
                   for stmt in branch.body for n in ast.walk(stmt)}
    found = []
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found += [f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in (modules or {}) else node.module
                      for a in node.names]
    return found


def cycles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
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


def host() -> None:
    files = [p for p in CORE.rglob("*.py") if p.relative_to(CORE).parts[0] not in SUBSYSTEMS]
    lines = sum(nonblank(p) for p in files)
    print(f"1. plugin host (memtree_core without {', '.join(s + '/' for s in SUBSYSTEMS)}): "
          f"{lines:,} non-blank lines in {len(files)} modules (goal <= {HOST_GOAL:,}: "
          f"{'ok' if lines <= HOST_GOAL else 'OVER'})")
    for sub in SUBSYSTEMS:
        d = CORE / sub
        if d.is_dir():
            print(f"   subsystem {sub + '/':12s} {sum(nonblank(p) for p in d.rglob('*.py')):6,d} non-blank lines")
        else:
            print(f"   subsystem {sub + '/':12s} MISSING")
    found = sorted(sorted(c) for c in cycles(import_graph()))
    print(f"   import cycles: {len(found)}" + "".join(f"\n     {' <-> '.join(c)}" for c in found))
    into = [f"{module_name(p)} -> {n}" for p in CORE.rglob("*.py") for n in imported(p)
            if n.startswith("memtree_plugins.")]
    print(f"   core -> plugin imports: {len(into)}" + "".join(f"\n     {x}" for x in into))


def forwarder() -> None:
    d = CORE / "forwarder"
    if not d.is_dir():
        print("2. forwarder: memtree_core/forwarder/ does not exist")
        return
    lines = sum(nonblank(p) for p in d.rglob("*.py"))
    stdlib = set(sys.stdlib_module_names) | {"__future__"}
    foreign = sorted({f"{module_name(p)} -> {n}" for p in d.rglob("*.py") for n in imported(p)
                      if n.split(".")[0] not in stdlib and not n.startswith("memtree_core.forwarder")
                      and n != "memtree_core"})
    print(f"2. forwarder: {lines:,} non-blank lines (goal <= {FORWARDER_GOAL}: "
          f"{'ok' if lines <= FORWARDER_GOAL else 'OVER'}); imports outside the standard library and itself: "
          f"{len(foreign)}" + "".join(f"\n     {x}" for x in foreign))


def public_methods(cls: type) -> list[str]:
    return sorted(n for n in dir(cls) if not n.startswith("_") and callable(getattr(cls, n, None))
                  and not isinstance(getattr(cls, n, None), type))


def store_api() -> None:
    sys.path.insert(0, str(REPO))
    from memtree_core.context import StoreAccess
    from memtree_core.store import Store

    protocol = sorted(n for n in vars(StoreAccess) if not n.startswith("_") and callable(vars(StoreAccess)[n]))
    concrete = [n for n in public_methods(Store) if n != "open"]  # open: the classmethod that makes one
    users: dict[str, set[str]] = defaultdict(set)
    for p in PLUGINS.rglob("*.py"):
        rel = p.relative_to(PLUGINS).parts
        owner = rel[0].removesuffix(".py")
        text = p.read_text(encoding="utf-8")
        for name in protocol:
            if f".{name}(" in text:
                users[name].add(owner)
    single = {n: sorted(users[n])[0] for n in protocol if len(users[n]) == 1}
    print(f"3. store API: {len(protocol)} public methods in StoreAccess, {len(concrete)} on Store "
          f"(goal <= {STORE_GOAL}: {'ok' if max(len(protocol), len(concrete)) <= STORE_GOAL else 'OVER'})")
    print(f"   StoreAccess: {', '.join(protocol)}")
    extra = sorted(set(concrete) - set(protocol))
    if extra:
        print(f"   on Store only (the host's): {', '.join(extra)}")
    print(f"   used by exactly one plugin: {len(single)}"
          + "".join(f"\n     {n} ({who})" for n, who in sorted(single.items())))


def imports_between_plugins() -> list[str]:
    """``memtree_plugins/<a>/...:line -> <b>`` for every import of another built-in plugin (``lib`` is
    shared code, not a plugin; ``memtree_plugins/__init__.py`` is the built-in list)."""
    found = []
    for p in sorted(PLUGINS.rglob("*.py")):
        rel = p.relative_to(PLUGINS).parts
        if len(rel) == 1 and rel[0] == "__init__.py":
            continue
        src = rel[0].removesuffix(".py")
        for node in ast.walk(ast.parse(p.read_text(encoding="utf-8"))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else [])
            for n in names:
                parts = n.split(".")
                if parts[0] == "memtree_plugins" and len(parts) > 1 and parts[1] not in (src, "lib"):
                    found.append(f"memtree_plugins/{'/'.join(rel)}:{node.lineno} -> {parts[1]}")
    return found


def lib_hooks() -> list[str]:
    """Modules of ``memtree_plugins/lib`` that implement hooks (shared code registers none)."""
    lib = PLUGINS / "lib"
    return [str(p.relative_to(REPO)) for p in sorted(lib.rglob("*.py")) if "hookimpl" in p.read_text(encoding="utf-8")]


def plugin_imports() -> None:
    found = imports_between_plugins()
    pairs: dict[tuple[str, str], int] = defaultdict(int)
    for line in found:
        src = line.split("/")[1].removesuffix(".py").split(":")[0]
        pairs[(src, line.rsplit(" -> ", 1)[1])] += 1
    print(f"4. imports between built-in plugins: {len(found)} (goal 0)"
          + "".join(f"\n     {a} -> {b}: {n}" for (a, b), n in sorted(pairs.items(), key=lambda kv: -kv[1])))
    hooks = lib_hooks()
    print(f"   memtree_plugins/lib/ modules that register hooks: {len(hooks)} (goal 0)"
          + "".join(f"\n     {h}" for h in hooks))


def main() -> None:
    host()
    forwarder()
    store_api()
    plugin_imports()


if __name__ == "__main__":
    main()
