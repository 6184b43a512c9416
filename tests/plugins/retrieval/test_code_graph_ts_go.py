"""Callees and callers from ``neighbors`` in TypeScript and Go, on real files through the real indexer and
store: names passed on by a barrel file (``export * from``), a call of a module value that is no function,
a Go package's test files (built into its tests only) and Go conversions (``T(x)`` calls nothing)."""

from __future__ import annotations

from pathlib import Path

import pytest

from memtree_plugins.retrieval.graph import neighbors
from memtree_plugins.walkers.repo_index import index_directory

TS = {
    "src/utils/common.ts": (
        "export const isArray = Array.isArray\n\n"
        "export function isDraft(value: any): boolean {\n  return !!value && !!value.draft\n}\n\n"
        "export function latest(state: any): any {\n  return state.copy || state.base\n}\n"),
    "src/utils/errors.ts": "export function die(code: number): never {\n  throw new Error(`failed ${code}`)\n}\n",
    "src/utils/env.ts": "export const NOTHING = Symbol('nothing')\n",
    # The barrel: every module's names passed on, one of them by name only.
    "src/internal.ts": ('export * from "./utils/env"\nexport * from "./utils/common"\n'
                        'export {die} from "./utils/errors"\n'),
    "src/core/finalize.ts": (
        'import {isDraft, latest, die, isArray} from "../internal"\n\n'
        "export function finalize(value: any): any {\n  if (!isDraft(value)) die(3)\n"
        "  if (isArray(value)) return value\n  return latest(value)\n}\n"),
    # a default-style re-export of another name: ``latest`` here is not common.ts's
    "src/other.ts": "export function latest(): number {\n  return 0\n}\n",
}

GO = {
    "pool.go": ("package ws\n\n// BufferPool hands out buffers.\ntype BufferPool interface {\n\tGet() interface{}\n"
                "\tPut(interface{})\n}\n\ntype Size int\n\ntype Conn struct {\n\tpool BufferPool\n}\n\n"
                "func (c *Conn) flush(b []byte) Size {\n\tc.pool.Put(b)\n\treturn Size(len(b))\n}\n\n"
                "func (c *Conn) grow() {\n\tc.flush(nil)\n}\n"),
    "pool_test.go": ("package ws\n\nimport \"testing\"\n\ntype fakePool struct{ got []interface{} }\n\n"
                     "func (p *fakePool) Get() interface{} { return nil }\n\n"
                     "func (p *fakePool) Put(v interface{}) { p.got = append(p.got, v) }\n\n"
                     "func TestFlush(t *testing.T) {\n\tp := &fakePool{}\n\tc := &Conn{pool: p}\n"
                     "\tc.flush([]byte(\"x\"))\n\tp.Put(1)\n}\n"),
}


def _index(app, project: Path, files: dict[str, str]) -> dict[tuple[str, str], str]:
    for rel, text in files.items():
        p = project / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    index_directory(app, project)
    rows = app.store.query("SELECT json_extract(metadata, '$.path'), json_extract(metadata, '$.symbol'), id "
                           "FROM nodes WHERE kind = 'file_chunk' AND status = 'live' "
                           "AND json_extract(metadata, '$.symbol') IS NOT NULL")
    return {(str(Path(p).relative_to(project)), s): i for p, s, i in rows}


def _calls(app, node: str, direction: str) -> set[str]:
    got = neighbors(app, node, direction=direction, edge_kinds=["references"])
    return {n.id for n in got.neighbors if "calls" in n.rels}


def test_typescript_names_passed_on_by_a_barrel_file_reach_their_definitions(app, project):
    ids = _index(app, project, TS)
    finalize = ids[("src/core/finalize.ts", "finalize")]
    want = {ids[("src/utils/common.ts", "isDraft")], ids[("src/utils/common.ts", "latest")],
            ids[("src/utils/errors.ts", "die")]}
    assert _calls(app, finalize, "out") == want  # not other.ts's latest; isArray is no function written here
    assert _calls(app, ids[("src/utils/common.ts", "latest")], "in") == {finalize}
    assert _calls(app, ids[("src/utils/errors.ts", "die")], "in") == {finalize}
    assert not _calls(app, ids[("src/other.ts", "latest")], "in")


def test_typescript_a_called_module_value_is_used_not_called(app, project):
    ids = _index(app, project, TS)
    got = neighbors(app, ids[("src/core/finalize.ts", "finalize")], direction="out", edge_kinds=["references"])
    rels = {n.id: n.rels for n in got.neighbors}
    assert rels.get(ids[("src/utils/common.ts", "isArray")]) == ["uses"]


@pytest.mark.parametrize("order", ["package first", "tests first"])
def test_go_code_outside_tests_never_calls_into_the_package_tests(app, project, order):
    files = GO if order == "package first" else dict(reversed(list(GO.items())))
    ids = _index(app, project, files)
    flush = ids[("pool.go", "Conn.flush")]
    assert _calls(app, flush, "out") == set()  # c.pool.Put is the interface's: no body here
    assert _calls(app, ids[("pool_test.go", "fakePool.Put")], "in") == {ids[("pool_test.go", "TestFlush")]}
    assert _calls(app, flush, "in") == {ids[("pool.go", "Conn.grow")], ids[("pool_test.go", "TestFlush")]}


def test_go_a_conversion_to_a_type_is_a_type_use_not_a_call(app, project):
    ids = _index(app, project, GO)
    got = neighbors(app, ids[("pool.go", "Conn.flush")], direction="out", edge_kinds=["references"])
    rels = {n.id: n.rels for n in got.neighbors}
    size = ids[("pool.go", "Size")]
    assert "calls" not in rels.get(size, []) and "uses-type" in rels.get(size, [])


# Two types with methods of the same names: only a receiver's declared type tells which one a call means.
GO_TYPED = {
    "router.go": ("package mux\n\ntype Router struct {\n\troutes []*Route\n\tcur    *Route\n}\n\n"
                  "func (r *Router) NewRoute() *Route {\n\troute := &Route{}\n\tr.routes = append(r.routes, route)\n"
                  "\treturn route\n}\n\n"
                  "func (r *Router) Path(tpl string) *Route {\n\treturn r.NewRoute().Path(tpl)\n}\n\n"
                  "func (r *Router) Name(n string) *Route {\n\treturn r.NewRoute().Name(n)\n}\n\n"
                  "func (r *Router) Last() string {\n\treturn r.cur.Name(\"x\").name\n}\n\n"
                  "func Build(n string) *Route {\n\tvar rt Route\n\tother := Route{}\n\tother.Path(n)\n"
                  "\treturn rt.Name(n)\n}\n"),
    "route.go": ("package mux\n\ntype Route struct {\n\tname string\n\tpath string\n}\n\n"
                 "func (r *Route) Path(tpl string) *Route {\n\tr.path = tpl\n\treturn r\n}\n\n"
                 "func (r *Route) Name(n string) *Route {\n\tr.name = n\n\treturn r\n}\n"),
}

# Classes long enough to be split into one chunk per method.
PAD = "".join(f"  note{i}_ = {i}\n" for i in range(90))
TS_TYPED = {
    "src/map.ts": ("export class ObservableMap {\n  private data_ = new Map<string, number>()\n" + PAD +
                   "  get(key: string): number | undefined {\n    return this.data_.get(key)\n  }\n"
                   "  has(key: string): boolean {\n    return this.data_.has(key)\n  }\n}\n"),
    "src/box.ts": ("export class Box {\n  private value_ = 0\n" + PAD + "  get(): number {\n    return this.value_\n  }\n"
                   "  has(): boolean {\n    return true\n  }\n}\n"),
    "src/api.ts": ('import {ObservableMap} from "./map"\nimport {Box} from "./box"\n\n'
                   "export function read(map: ObservableMap, key: string): number | undefined {\n"
                   "  return map.has(key) ? map.get(key) : undefined\n}\n\n"
                   "export function unbox(this: Box): number {\n  const other = new Box()\n"
                   "  return other.has() ? this.get() : 0\n}\n"),
}


def test_go_a_receivers_declared_type_picks_the_method_among_same_named_ones(app, project):
    ids = _index(app, project, GO_TYPED)
    route = {m: ids[("route.go", f"Route.{m}")] for m in ("Path", "Name")}
    new_route = ids[("router.go", "Router.NewRoute")]
    # r.NewRoute().Path(tpl): the result of a method declared in the file, then a method of that type
    assert _calls(app, ids[("router.go", "Router.Path")], "out") == {new_route, route["Path"]}
    assert _calls(app, ids[("router.go", "Router.Name")], "out") == {new_route, route["Name"]}
    assert _calls(app, ids[("router.go", "Router.Last")], "out") == {route["Name"]}  # a struct field's type
    assert _calls(app, ids[("router.go", "Build")], "out") == {route["Path"], route["Name"]}  # var, literal
    assert _calls(app, route["Name"], "in") == {ids[("router.go", "Router.Name")], ids[("router.go", "Router.Last")],
                                               ids[("router.go", "Build")]}


def test_typescript_a_typed_parameter_or_this_picks_the_method_among_same_named_ones(app, project):
    ids = _index(app, project, TS_TYPED)
    read, unbox = ids[("src/api.ts", "read")], ids[("src/api.ts", "unbox")]
    assert _calls(app, read, "out") == {ids[("src/map.ts", "ObservableMap.get")],
                                        ids[("src/map.ts", "ObservableMap.has")]}
    # ``this: Box`` and ``new Box()``: Box's methods (and the class, constructed)
    assert _calls(app, unbox, "out") == {ids[("src/box.ts", "Box.get")], ids[("src/box.ts", "Box.has")],
                                         ids[("src/box.ts", "Box")]}
    assert _calls(app, ids[("src/map.ts", "ObservableMap.get")], "in") == {read}


GO_ELEMENTS = {
    "mw.go": ("package mux\n\ntype middleware interface {\n\tMiddleware(h int) int\n}\n\n"
              "type MiddlewareFunc func(int) int\n\n"
              "func (mw MiddlewareFunc) Middleware(h int) int {\n\treturn mw(h)\n}\n"),
    "match.go": ("package mux\n\ntype Route struct{ name string }\n\nfunc (r *Route) Match(p string) bool {\n"
                 "\treturn r.name == p\n}\n\ntype Matcher struct{}\n\nfunc (m Matcher) Match(p string) bool {\n"
                 "\treturn p != \"\"\n}\n\ntype Router struct {\n\troutes []*Route\n\tmws    []middleware\n}\n\n"
                 "func (r *Router) Match(p string) bool {\n\tfor _, route := range r.routes {\n"
                 "\t\tif route.Match(p) {\n\t\t\treturn true\n\t\t}\n\t}\n\treturn r.routes[0].Match(p)\n}\n\n"
                 "func (r *Router) wrap(h int) int {\n\tfor i := range r.mws {\n\t\th = r.mws[i].Middleware(h)\n"
                 "\t}\n\treturn h\n}\n\nfunc run(m middleware) int {\n\treturn m.Middleware(1)\n}\n"),
}


def test_go_elements_of_a_typed_collection_and_an_interface_receiver(app, project):
    ids = _index(app, project, GO_ELEMENTS)
    # ``route`` ranges over []*Route and ``r.routes[0]`` is one: Route.Match, not Matcher.Match
    assert _calls(app, ids[("match.go", "Router.Match")], "out") == {ids[("match.go", "Route.Match")]}
    # a method of an interface has no body to call: no guess at the one type that has a method so named
    assert _calls(app, ids[("match.go", "Router.wrap")], "out") == set()
    assert _calls(app, ids[("match.go", "run")], "out") == set()
    assert _calls(app, ids[("mw.go", "MiddlewareFunc.Middleware")], "in") == set()


# A Go package whose types, methods and fields are declared in different files, with a second type that has
# methods of the same names: the result and field types the other files state decide.
GO_PACKAGE = {
    "conf.go": ("package mux\n\ntype routeConf struct {\n\tregexp routeRegexpGroup\n}\n\n"
                "type routeRegexpGroup struct {\n\tpath *routeRegexp\n}\n"),
    "regexp.go": ("package mux\n\ntype routeRegexp struct{ tpl string }\n\n"
                  "func (r *routeRegexp) url(v string) string {\n\treturn r.tpl + v\n}\n"),
    "route.go": ("package mux\n\ntype Route struct {\n\trouteConf\n\tname string\n}\n\n"
                 "func (r *Route) Path(tpl string) *Route {\n\treturn r\n}\n\n"
                 "func (r *Route) Handler(h int) *Route {\n\treturn r\n}\n"),
    "router.go": ("package mux\n\ntype Router struct{ routes []*Route }\n\n"
                  "func (r *Router) NewRoute() *Route {\n\troute := &Route{}\n\treturn route\n}\n\n"
                  "func (r *Router) Handle(p string, h int) *Route {\n\treturn r.NewRoute().Path(p).Handler(h)\n}\n\n"
                  "func (r *Router) Path(tpl string) *Route {\n\treturn r.NewRoute()\n}\n\n"
                  "func (r *Router) Handler(h int) *Route {\n\treturn nil\n}\n"),
    "build.go": ("package mux\n\nfunc build(rt *Route, v string) string {\n\treturn rt.regexp.path.url(v)\n}\n\n"
                 "type other struct{}\n\nfunc (o other) url(v string) string {\n\treturn v\n}\n"),
}


def test_go_result_and_field_types_stated_in_other_files_of_the_package(app, project):
    ids = _index(app, project, GO_PACKAGE)
    handle = ids[("router.go", "Router.Handle")]
    assert _calls(app, handle, "out") == {ids[("router.go", "Router.NewRoute")], ids[("route.go", "Route.Path")],
                                          ids[("route.go", "Route.Handler")]}
    # rt.regexp: a field of the struct Route embeds, declared in another file; .path: another struct's field
    assert _calls(app, ids[("build.go", "build")], "out") == {ids[("regexp.go", "routeRegexp.url")]}
    assert _calls(app, ids[("router.go", "Router.Handler")], "in") == set()
    meta = app.store.query_one("SELECT metadata FROM nodes WHERE id = ?", (ids[("route.go", "Route.Path")],))[0]
    assert '"returns"' not in meta  # what a file states for its package is no reference of its own


GO_VARIADIC = {
    "opts.go": ("package oauth\n\ntype Option interface {\n\tsetValue(m map[string]string)\n}\n\n"
                "type setParam struct{ k, v string }\n\n"
                "func (p setParam) setValue(m map[string]string) {\n\tm[p.k] = p.v\n}\n\n"
                "func apply(m map[string]string, opts ...Option) {\n\tfor _, o := range opts {\n"
                "\t\to.setValue(m)\n\t}\n}\n\n"
                "func direct(m map[string]string, p setParam) {\n\tp.setValue(m)\n}\n"),
}


def test_go_a_variadic_parameter_is_a_slice_of_its_type(app, project):
    ids = _index(app, project, GO_VARIADIC)
    assert _calls(app, ids[("opts.go", "apply")], "out") == set()  # the interface's method: no body
    assert _calls(app, ids[("opts.go", "setParam.setValue")], "in") == {ids[("opts.go", "direct")]}
