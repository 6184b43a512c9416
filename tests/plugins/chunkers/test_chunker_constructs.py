"""Definitions the tree-sitter grammars misread in real libraries, one construct per test: each snippet goes
through the real chunker, and through ``read`` into a real store, where a search for the bare name must put
the definition first."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from helpers.chunks import assert_tiles

from memtree_plugins.chunkers.treesitter import TreeSitterChunker, language_of
from memtree_plugins.retrieval.search import search
from memtree_plugins.wrappers.read import read

pytest.importorskip("tree_sitter")


def chunks_of(path: str, text: str) -> dict[str, tuple[str, int, int]]:
    """symbol -> (kind, first line, last line), the tiling checked; every container is split into its
    members, as a long one is, so each definition shows."""
    chunks = TreeSitterChunker(class_split_lines=1).chunk(path, text)
    assert_tiles(chunks, text)
    out: dict[str, tuple[str, int, int]] = {}
    for c in chunks:
        if c.symbol:  # a class's header chunk comes before the fields between its methods
            out.setdefault(c.symbol, (c.kind, c.start_line, c.end_line))
    return out


def first_hit_holds(app, project: Path, name: str, text: str, query: str, line_text: str) -> None:
    """``text`` read as ``name`` beside a file that only uses ``query``: the first hit holds ``line_text``."""
    (project / name).write_text(text)
    (project / "uses.txt").write_text(f"{query} is used here; {query}, {query} and {query} again.\n")
    for f in (name, "uses.txt"):
        read(app, str(project / f))
    hits = search(app, query, mode="keyword", limit=3).hits
    assert hits, query
    first = app.store.get_node(hits[0].id)
    assert first.source_uri.startswith((project / name).as_uri()), [h.source_uri for h in hits]
    assert line_text in first.content, first.content


CPP_HEADER = """\
    #pragma once
    #include <string>

    namespace widgets {

    // Draws itself.
    class WIDGETS_API Widget : public Base {
     public:
      explicit Widget(int w) : width_(w) {}
      int width() const { return width_; }

     private:
      int width_;
    };

    int area(const Widget& w);

    }  // namespace widgets
    """


def test_a_dot_h_header_that_reads_as_cpp_is_chunked_with_the_cpp_grammar() -> None:
    text = textwrap.dedent(CPP_HEADER)
    assert language_of("include/widget.h", text) == "cpp"
    assert language_of("include/crc.h", "int crc(int v);\n#ifdef __cplusplus\nextern \"C\" {\n#endif\n") == "c"
    assert language_of("include/widget.h") == "c"  # no text to look at: the suffix decides
    got = chunks_of("include/widget.h", text)
    assert got["widgets.Widget"][0] == "class", got


def test_an_export_macro_between_class_and_its_name_keeps_the_class_and_what_follows(app, project) -> None:
    text = textwrap.dedent(CPP_HEADER).replace("int area(const Widget& w);", "int area(const Widget& w) {\n"
                                                                          "  return w.width();\n}")
    got = chunks_of("widget.hpp", text)
    assert got["widgets.Widget"][:2] == ("class", 6), got  # the comment above belongs to it
    assert "widgets.area" in got, got  # the rest of the file was not lost
    first_hit_holds(app, project, "widget.hpp", text, "Widget", "class WIDGETS_API Widget")


def test_a_trailing_annotation_macro_does_not_rename_the_function(app, project) -> None:
    text = textwrap.dedent("""\
        class Queue {
         public:
          bool is_empty() const LOCKS_EXCLUDED(mu_) {
            return items_.empty();
          }
          void Flush()
              EXCLUSIVE_LOCKS_REQUIRED(mu_) {
            items_.clear();
          }
        };
        """)
    whole = TreeSitterChunker().chunk("queue.cc", text)  # a small class: one chunk listing its members
    assert [(c.symbol, c.members) for c in whole] == [("Queue", ("Queue.is_empty", "Queue.Flush"))]
    split = TreeSitterChunker(class_split_lines=1).chunk("queue.cc", text)
    assert_tiles(split, text)
    assert [c.symbol for c in split] == ["Queue", "Queue.is_empty", "Queue.Flush"]
    first_hit_holds(app, project, "queue.cc", text, "is_empty", "bool is_empty() const")


def test_a_function_returning_a_reference_is_a_definition(app, project) -> None:
    text = textwrap.dedent("""\
        namespace util {
        template <typename T>
        inline const T& AsConst(const T& x) {
          return x;
        }
        }  // namespace util
        """)
    got = chunks_of("util.h", text)
    assert "util.AsConst" in got, got
    first_hit_holds(app, project, "util.h", text, "AsConst", "inline const T& AsConst")


def test_definitions_in_an_if_block_inside_a_namespace_and_in_an_anonymous_namespace(app, project) -> None:
    text = textwrap.dedent("""\
        namespace port {
        #if defined(_WIN32)
        int OpenPipe(const char* name) {
          return win_open(name);
        }
        #else
        int OpenPipe(const char* name) {
          return posix_open(name);
        }
        #endif
        }  // namespace port

        namespace {
        class LineReader {
         public:
          int Next() { return 0; }
        };
        }  // namespace
        """)
    got = chunks_of("port.cc", text)
    assert got["port.OpenPipe"][0] in ("function", "method"), got
    assert got["LineReader"][0] == "class", got  # no enclosing name to carry
    first_hit_holds(app, project, "port.cc", text, "LineReader", "class LineReader")


def test_definitions_around_a_region_the_grammar_cannot_parse_keep_their_chunks() -> None:
    # A C-named header with C++ references after its extern "C" block: the C grammar turns the whole file
    # into one error region, whose complete definitions are still definitions.
    text = textwrap.dedent("""\
        #ifndef PYJP_H
        #define PYJP_H
        #ifdef __cplusplus
        extern "C"
        {
        #endif

        struct PyJPArray
        {
        \tPyObject_HEAD
        \tJPArray *m_Array;
        } ;

        inline Context* PyJPModule_getContext()
        {
        \treturn global_context;
        }

        #ifdef __cplusplus
        }
        #endif
        JPPyObject PyJPClass_create(JPJavaFrame &frame, JPClass* cls);
        void PyJPModule_rethrow(const JPStackInfo& info);
        #endif
        """)
    assert language_of("pyjp.h", text) == "c"
    got = chunks_of("pyjp.h", text)
    assert got.get("PyJPArray", ("",))[0] == "struct", got
    assert got.get("PyJPModule_getContext", ("",))[0] == "function", got


def test_an_exported_typescript_value_is_a_definition(app, project) -> None:
    text = textwrap.dedent("""\
        import { Observable } from './Observable';

        /** The same Observable instance returned by any call to empty(). */
        export const EMPTY = new Observable<never>((subscriber) => subscriber.complete());

        export let retries = 3;
        const local = 1;
        export const a = 1, b = 2;

        export function empty() {
          return EMPTY;
        }
        """)
    got = chunks_of("src/empty.ts", text)
    assert got["EMPTY"][:2] == ("constant", 3), got  # with its doc comment
    assert got["retries"][0] == "variable", got
    assert not {"local", "a", "b"} & set(got), got  # not exported, or not one name
    first_hit_holds(app, project, "empty.ts", text, "EMPTY", "export const EMPTY")


def test_a_rust_type_s_definition_comes_before_its_impl_blocks(app, project) -> None:
    impls = "".join(f"impl {t} for Bytes {{\n    fn {f}(&self) {{ self.touch(); }}\n}}\n\n"
                    for t, f in (("Clone", "clone_it"), ("Debug", "fmt_it"), ("Hash", "hash_it"), ("Ord", "cmp_it")))
    text = ("use core::fmt;\n\n/// A cheaply cloneable chunk of memory.\npub struct Bytes {\n    ptr: *const u8,\n    len: usize,\n}\n\n"
            + impls + "impl Bytes {\n    pub fn len(&self) -> usize {\n        self.len\n    }\n}\n")
    got = chunks_of("src/bytes.rs", text)
    assert got["Bytes"][:2] == ("struct", 3), got
    first_hit_holds(app, project, "bytes.rs", text, "Bytes", "pub struct Bytes {")


def test_only_the_first_part_of_a_long_definition_answers_its_name(app, project) -> None:
    fields = "".join(f"\tField{i} string // field {i}\n" for i in range(260))
    text = f"package conf\n\n// Config holds every setting.\ntype Config struct {{\n{fields}}}\n"
    chunks = TreeSitterChunker().chunk("conf.go", text)
    assert_tiles(chunks, text)
    parts = [c for c in chunks if c.symbol == "Config"]
    assert [c.part for c in parts] == [1, 2] and parts[0].start_line == 3, [(c.part, c.start_line) for c in parts]
    (project / "conf.go").write_text(text)
    read(app, str(project / "conf.go"))
    rows = app.store.query("SELECT json_extract(metadata, '$.part'), symbols FROM nodes WHERE kind = 'file_chunk' "
                           "AND status = 'live' AND json_extract(metadata, '$.symbol') = 'Config' ORDER BY rowid")
    assert [(p, bool(s)) for p, s in rows] == [(None, True), (2, False)], rows
    hits = search(app, "Config", mode="keyword", limit=3).hits
    assert "type Config struct" in app.store.get_node(hits[0].id).content


@pytest.mark.parametrize("path, text, symbol", [
    ("lib.rs", "use std::io;\n\n/// Reads one frame.\n/// Blocks until it is whole.\npub fn read_frame() {}\n",
     "read_frame"),
    ("Frame.java", "package a;\n\n/**\n * One frame.\n */\npublic class Frame {\n  int n;\n}\n", "Frame"),
])
def test_rust_and_java_doc_comments_stay_with_their_definition(path: str, text: str, symbol: str) -> None:
    got = chunks_of(path, text)
    assert got[symbol][1] == 3, got


def test_java_annotation_elements_are_members_of_their_annotation(app, project) -> None:
    text = ("package jep;\n\nimport java.lang.annotation.*;\n\n@Retention(RetentionPolicy.RUNTIME)\n"
            "public @interface PyMethod {\n    /** Accept keyword arguments. */\n"
            "    public boolean kwargs() default false;\n\n    public boolean varargs() default false;\n}\n")
    whole = TreeSitterChunker().chunk("PyMethod.java", text)
    assert [c.members for c in whole if c.symbol == "PyMethod"] == [("PyMethod.kwargs", "PyMethod.varargs")]
    first_hit_holds(app, project, "PyMethod.java", text, "kwargs", "public boolean kwargs()")


def test_definitions_after_a_construct_the_grammar_cannot_parse_are_still_found(app, project) -> None:
    # An interface whose call signatures are separated by line breaks alone (mobx's IActionFactory): the
    # TypeScript grammar loses track there, and once took every definition after it down with it.
    text = textwrap.dedent("""\
        export interface IActionFactory
            extends Annotation,
                PropertyDecorator {
            // nameless actions
            <T extends Function | undefined | null>(fn: T): T
            // named actions
            <T extends Function | undefined | null>(name: string, fn: T): T

            bound: Annotation & PropertyDecorator
        }

        function createActionFactory(autoAction: boolean): IActionFactory {
            const res: IActionFactory = function action(arg1, arg2?): any {
                if (isFunction(arg1)) {
                    return createAction(arg1.name || DEFAULT_NAME, arg1, autoAction)
                }
                if (isStringish(arg2)) {
                    return storeAnnotation(arg1, arg2, autoAction ? autoAnnotation : plainAnnotation)
                }
            } as IActionFactory
            return res
        }

        export const action: IActionFactory = createActionFactory(false)
        Object.assign(action, actionAnnotation)

        export function runInAction<T>(fn: () => T): T {
            return executeAction(fn.name, false, fn, this, undefined)
        }

        export function isAction(thing: any) {
            return isFunction(thing) && thing.isMobxAction === true
        }
        """)
    got = chunks_of("src/api/action.ts", text)
    assert {"createActionFactory", "action", "runInAction", "isAction"} <= set(got), got
    assert got["runInAction"][:2] == ("function", 27), got
    first_hit_holds(app, project, "action.ts", text, "runInAction", "export function runInAction")


def test_a_macro_blanked_before_parsing_keeps_every_byte_offset() -> None:
    text = 'class Queue {\n  void Flush() LOCKS_EXCLUDED(mu_, "é") {\n    items_.clear();\n  }\n};\nint after() {}\n'
    chunks = TreeSitterChunker(class_split_lines=1).chunk("q.cc", text)
    assert_tiles(chunks, text)
    flush = next(c for c in chunks if c.symbol == "Queue.Flush")
    assert flush.signature == "void Flush()", flush.signature


@pytest.mark.parametrize("path, text, expect, absent", [
    ("alt_exit.go", "package logrus\n\nimport \"os\"\n\n// Handlers run on exit.\nvar handlers = []func(){}\n\n"
     "const MaxDepth = 8\n\nvar (\n\tx = 1\n\ty = 2\n)\n\nvar a, b = 1, 2\n\nfunc Exit(code int) {\n\tos.Exit(code)\n}\n",
     {"handlers": ("variable", 5), "MaxDepth": ("constant", 8), "Exit": ("function", 17)}, {"x", "y", "a", "b"}),
    ("lib.rs", "use std::sync::atomic::AtomicUsize;\n\n/// Largest frame.\npub const MAX_FRAME: usize = 1 << 24;\n\n"
     "static COUNT: AtomicUsize = AtomicUsize::new(0);\n",
     {"MAX_FRAME": ("constant", 3), "COUNT": ("variable", 6)}, set()),
])
def test_go_and_rust_module_values_are_definitions(path: str, text: str, expect: dict, absent: set) -> None:
    got = chunks_of(path, text)
    assert {k: got.get(k, ("",))[:2] for k in expect} == expect, got
    assert not absent & set(got), got


def test_a_name_carried_by_more_chunks_than_the_candidate_window_still_finds_its_definition(app, project) -> None:
    # bytes' ``Bytes``: one struct with a long doc comment, and well over a hundred impl blocks and methods
    # that carry the name; a query for it must still reach the struct itself.
    doc = "".join(f"/// Bytes layout note {i}: a Bytes value shares its buffer.\n" for i in range(120))
    impls = "".join(f"impl Trait{i} for Bytes {{\n    fn op{i}(&self) -> Bytes {{ Bytes::new() }}\n}}\n\n"
                    for i in range(130))
    text = f"use core::ops;\n\n{doc}pub struct Bytes {{\n    ptr: *const u8,\n}}\n\n{impls}"
    first_hit_holds(app, project, "bytes.rs", text, "Bytes", "pub struct Bytes {")
