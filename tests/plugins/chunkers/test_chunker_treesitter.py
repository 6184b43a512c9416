"""The tree-sitter chunker: one chunk per definition in eight languages, qualified names, classes as
parents of their methods, long definitions in parts, tiling, and windows when a grammar is missing."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest
from helpers.chunks import assert_tiles

from memtree_plugins.chunkers.treesitter import GRAMMARS, TreeSitterChunker

pytest.importorskip("tree_sitter")

# One small program per language: (path, source, {qualified name: (kind, parent, signature start)}).
SOURCES = {
    "javascript": ("lib/command.js", """\
        const EventEmitter = require('events');

        // Parses one option flag.
        function parseFlag(flags) {
          return flags.split(/[ ,|]+/);
        }

        class Command extends EventEmitter {
          constructor(name) {
            super();
            this._name = name;
          }

          option(flags, description) {
            return this.addOption(parseFlag(flags), description);
          }
        }

        const splitArgs = (line) => line.trim().split(' ');
        exports.Command = Command;
        """, {"parseFlag": ("function", None, "function parseFlag(flags)"),
              "Command": ("class", None, "class Command extends EventEmitter"),
              "Command.constructor": ("method", "Command", "constructor(name)"),
              "Command.option": ("method", "Command", "option(flags, description)"),
              "splitArgs": ("function", None, "const splitArgs = (line) =>")}),
    "typescript": ("src/store.ts", """\
        import { Row } from './row';

        export interface StoreOptions {
          path: string;
        }

        export class RowStore {
          private rows: Row[] = [];

          insertRow(row: Row): number {
            this.rows.push(row);
            return this.rows.length;
          }
        }

        export type RowId = string;
        """, {"StoreOptions": ("interface", None, "export interface StoreOptions"),
              "RowStore": ("class", None, "export class RowStore"),
              "RowStore.insertRow": ("method", "RowStore", "insertRow(row: Row): number"),
              "RowId": ("type", None, "export type RowId")}),
    "tsx": ("ui/Button.tsx", """\
        export function FancyButton(props: { label: string }) {
          return <button>{props.label}</button>;
        }
        """, {"FancyButton": ("function", None, "export function FancyButton")}),
    "go": ("server/run.go", """\
        package server

        import "fmt"

        // Server answers requests.
        type Server struct {
        \tname string
        }

        // Run starts the server.
        func (s *Server) Run(port int) error {
        \tfmt.Println(s.name, port)
        \treturn nil
        }

        func NewServer(name string) *Server {
        \treturn &Server{name: name}
        }
        """, {"Server": ("struct", None, "type Server struct"),
              "Server.Run": ("method", "Server", "func (s *Server) Run(port int) error"),
              "NewServer": ("function", None, "func NewServer(name string) *Server")}),
    "rust": ("src/pool.rs", """\
        use std::collections::HashMap;

        pub struct Pool {
            slots: HashMap<u32, String>,
        }

        impl Pool {
            pub fn new() -> Self {
                Pool { slots: HashMap::new() }
            }

            pub fn take_slot(&mut self, id: u32) -> Option<String> {
                self.slots.remove(&id)
            }
        }

        fn main() {
            let _ = Pool::new();
        }
        """, {"Pool": ("impl", None, "impl Pool"),
              "Pool.new": ("method", "Pool", "pub fn new() -> Self"),
              "Pool.take_slot": ("method", "Pool", "pub fn take_slot(&mut self, id: u32)"),
              "main": ("function", None, "fn main()")}),
    "java": ("src/Ledger.java", """\
        package shop;

        import java.util.List;

        public class Ledger {
            private final List<Integer> entries;

            public Ledger(List<Integer> entries) {
                this.entries = entries;
            }

            public int balanceAt(int day) {
                return entries.get(day);
            }
        }
        """, {"Ledger": ("class", None, "public class Ledger"),
              "Ledger.Ledger": ("method", "Ledger", "public Ledger(List<Integer> entries)"),
              "Ledger.balanceAt": ("method", "Ledger", "public int balanceAt(int day)")}),
    "c": ("src/crc.c", """\
        #include <stdint.h>

        struct crc_state {
            uint32_t value;
        };

        /* Feed one byte. */
        static uint32_t crc_update(struct crc_state *s, uint8_t b) {
            s->value ^= b;
            return s->value;
        }
        """, {"crc_state": ("struct", None, "struct crc_state"),
              "crc_update": ("function", None, "static uint32_t crc_update(struct crc_state *s, uint8_t b)")}),
    "cpp": ("src/matrix.cpp", """\
        #include <vector>

        namespace linalg {
        class Matrix {
         public:
          int rows() const { return n_; }
          void resize(int n);
         private:
          int n_ = 0;
        };
        }

        void linalg::Matrix::resize(int n) {
          n_ = n;
        }

        template <typename T> T clampTo(T v, T lo) { return v < lo ? lo : v; }
        """, {"linalg": ("namespace", None, "namespace linalg"),
              "linalg.Matrix": ("class", "linalg", "class Matrix"),
              "linalg.Matrix.rows": ("method", "linalg.Matrix", "int rows() const"),
              "linalg.Matrix.resize": ("function", "linalg.Matrix", "void linalg::Matrix::resize(int n)"),
              "clampTo": ("function", None, "template <typename T> T clampTo(T v, T lo)")}),
    "ruby": ("lib/cart.rb", """\
        require 'set'

        module Shop
          class Cart
            def initialize
              @items = []
            end

            # Adds one item.
            def add_item(item)
              @items << item
            end

            def self.empty
              new
            end
          end
        end

        def helper_total(cart)
          cart.size
        end
        """, {"Shop": ("module", None, "module Shop"),
              "Shop.Cart": ("class", "Shop", "class Cart"),
              "Shop.Cart.add_item": ("method", "Shop.Cart", "def add_item(item)"),
              "Shop.Cart.empty": ("method", "Shop.Cart", "def self.empty"),
              "helper_total": ("function", None, "def helper_total(cart)")}),
}


def test_every_covered_language_has_a_sample() -> None:
    assert set(SOURCES) == set(GRAMMARS)


@pytest.mark.parametrize("lang", sorted(SOURCES))
def test_one_chunk_per_definition_with_name_kind_signature_and_parent(lang: str) -> None:
    path, src, expected = SOURCES[lang]
    text = textwrap.dedent(src)
    # split every container so members get their own chunks, whatever the sample's size
    chunks = TreeSitterChunker(class_split_lines=1).chunk(path, text)
    assert_tiles(chunks, text)
    got = {c.symbol: c for c in chunks if c.symbol and c.kind != "class_body"}
    for qual, (kind, parent, sig) in expected.items():
        assert qual in got, (qual, sorted(got))
        c = got[qual]
        assert (c.kind, c.parent, c.name) == (kind, parent, qual.rsplit(".", 1)[-1]), qual
        assert c.signature.startswith(sig), (c.signature, sig)
        # the chunk holds the definition's own line
        assert any(c.name in ln for ln in c.text.splitlines()), qual
    assert chunks[0].kind == "module_header" or chunks[0].symbol in expected


def test_a_comment_block_above_a_definition_stays_with_it() -> None:
    path, src, _ = SOURCES["go"]
    chunks = TreeSitterChunker(class_split_lines=1).chunk(path, textwrap.dedent(src))
    run = next(c for c in chunks if c.symbol == "Server.Run")
    assert run.text.startswith("// Run starts the server.")


def test_small_class_stays_whole_and_lists_nothing_else() -> None:
    path, src, _ = SOURCES["java"]
    chunks = TreeSitterChunker().chunk(path, textwrap.dedent(src))
    ledger = [c for c in chunks if c.symbol and c.symbol.startswith("Ledger")]
    assert [c.symbol for c in ledger] == ["Ledger"]
    assert "balanceAt" in ledger[0].text


def test_big_class_header_outline_lists_its_methods() -> None:
    methods = "\n".join(f"  method{i}(a) {{\n    return a + {i};\n  }}\n" for i in range(40))
    text = f"class Big {{\n  constructor() {{ this.x = 1; }}\n\n{methods}}}\n"
    chunks = TreeSitterChunker().chunk("big.js", text)
    assert_tiles(chunks, text)
    head = chunks[0]
    assert (head.kind, head.symbol) == ("class", "Big")
    assert "method0(a)" in head.outline
    assert sum(1 for c in chunks if c.parent == "Big") == 41


def test_very_long_definition_is_cut_into_parts_that_repeat_its_header() -> None:
    body = "".join(f"  total += {i};\n" for i in range(500))
    text = f"function sumAll(values) {{\n  let total = 0;\n{body}  return total;\n}}\n"
    chunks = TreeSitterChunker(max_lines=200).chunk("sum.js", text)
    assert_tiles(chunks, text)
    assert len(chunks) == 3
    assert all(c.symbol == "sumAll" and c.signature == "function sumAll(values)" for c in chunks)
    assert all("function sumAll(values)" in c.outline for c in chunks)
    assert "part 2/3" in chunks[1].outline


def test_leftover_top_level_code_is_grouped() -> None:
    text = "const a = 1;\nconst b = 2;\nfunction f() {}\nconsole.log(a);\nconsole.log(b);\n"
    chunks = TreeSitterChunker().chunk("x.js", text)
    assert [(c.kind, c.start_line, c.end_line) for c in chunks] == [
        ("module_header", 1, 2), ("function", 3, 3), ("statements", 4, 5)]


def test_broken_source_still_tiles() -> None:
    text = "function ok() { return 1; }\nclass {{{ nope\nfunction after() {}\n" * 3
    chunks = TreeSitterChunker().chunk("bad.ts", text)
    assert_tiles(chunks, text)
    assert any(c.symbol == "ok" for c in chunks)


def test_reading_a_go_file_stores_its_definitions(app, project) -> None:
    from memtree_plugins.wrappers.read import read

    path, src, _ = SOURCES["go"]
    f = project / "run.go"
    f.write_text(textwrap.dedent(src))
    read(app, str(f))
    rows = app.store.query("SELECT metadata FROM nodes WHERE kind = 'file_chunk' AND status = 'live'")
    metas = [json.loads(m) for (m,) in rows]
    run = next(m for m in metas if m.get("symbol") == "Server.Run")
    assert (run["chunker"], run["name"], run["parent"]) == ("treesitter", "Run", "Server")
    assert run["signature"].startswith("func (s *Server) Run")


def test_a_missing_grammar_wheel_means_windows_and_info_says_so(home, project) -> None:
    # A real interpreter in which the Go grammar cannot be imported (as when its wheel is not installed).
    code = textwrap.dedent(f"""
        import sys, json
        sys.modules["tree_sitter_go"] = None
        from memtree_core.app import App
        from memtree_plugins.commands.info import gather
        app = App.open({str(project)!r})
        info = gather(app)
        print(json.dumps([app.chunker_for("a.go").name, app.chunker_for("a.rs").name,
                          info["code_chunking"], info["degraded"]]))
        app.close()
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    go, rs, chunking, degraded = json.loads(out.stdout)
    assert (go, rs) == ("window", "treesitter")
    assert list(chunking["windows"]) == ["go"]
    assert "go" not in chunking["by_definition"]
    assert any("windows" in d and "go" in d for d in degraded)


def test_a_doc_comment_one_blank_line_above_stays_with_its_method_but_a_file_header_does_not() -> None:
    text = ("/* Licence: MIT */\n\nfunction first() {}\n\nclass Help {\n  /**\n   * Visible commands.\n   */\n\n"
            "  visibleCommands(cmd) {\n    return cmd;\n  }\n}\n")
    chunks = TreeSitterChunker(class_split_lines=1).chunk("help.js", text)
    assert_tiles(chunks, text)
    assert chunks[0].kind == "module_header" and chunks[0].text.startswith("/* Licence")
    method = next(c for c in chunks if c.symbol == "Help.visibleCommands")
    assert method.text.lstrip().startswith("/**") and "class_body" not in {c.kind for c in chunks}


def test_definitions_inside_an_include_guard_and_extern_c_get_their_own_chunks() -> None:
    text = ("#ifndef CRC_H\n#define CRC_H\n#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n"
            "static int crc_init(void) {\n  return 0;\n}\n\nint crc_step(int v) {\n  return v + 1;\n}\n\n"
            "#ifdef __cplusplus\n}\n#endif\n#endif\n")
    for path in ("crc.h", "crc.hpp"):
        chunks = TreeSitterChunker().chunk(path, text)
        assert_tiles(chunks, text)
        got = {c.symbol: c for c in chunks if c.symbol}
        assert {"crc_init", "crc_step"} <= set(got), (path, [(c.kind, c.symbol) for c in chunks])
        assert got["crc_step"].text.startswith("int crc_step(int v)")


def test_a_long_stretch_of_plain_code_is_cut_into_windows() -> None:
    text = "".join(f"console.log({i});\n" for i in range(450))
    chunks = TreeSitterChunker(max_lines=200).chunk("script.js", text)
    assert_tiles(chunks, text)
    assert [c.end_line - c.start_line + 1 for c in chunks] == [200, 200, 50]
