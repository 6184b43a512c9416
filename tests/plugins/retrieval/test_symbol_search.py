"""Identifier-aware keyword search: the chunk that defines a name outranks the chunks that only use it."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from memtree_plugins.retrieval.search import Filters, search
from memtree_plugins.wrappers.read import read

DEFINES = """\
    const path = require('path');

    function helper(x) {
      return x;
    }

    // Split "-v, --verbose" into its short and long names.
    function parseFlag(flags) {
      const parts = flags.split(/[ ,|]+/);
      return { short: parts[0], long: parts[1] };
    }

    class Option {
      constructor(flags, description) {
        this.flags = flags;
        this.description = description;
      }

      attributeName() {
        return this.flags.replace(/^--/, '');
      }
    }

    module.exports = { parseFlag, Option };
    """

USES = """\
    const { parseFlag, Option } = require('./flags');

    // parseFlag handles every flag; parseFlag is called for each option and parseFlag results are cached.
    function registerAll(program, specs) {
      for (const spec of specs) {
        const names = parseFlag(spec);
        const again = parseFlag(spec.toUpperCase());
        program.options.push(new Option(spec, 'an option'));
        program.options.push(new Option(names.long, 'an Option made from another Option'));
        program.names.push(names, again, parseFlag(spec.trim()));
      }
    }
    """

README = """\
    # flags

    `parseFlag` parses a flag. Use parseFlag for every flag: parseFlag("-v, --verbose").
    An Option holds flags; create an Option per flag. Option, Option, Option.
    """


@pytest.fixture
def indexed(app, project: Path):
    for name, text in (("flags.js", DEFINES), ("register.js", USES), ("README.md", README)):
        f = project / name
        f.write_text(textwrap.dedent(text))
        read(app, str(f))
    return app


@pytest.mark.parametrize("query, defines", [
    ("parseFlag", "function parseFlag(flags)"),
    ("Option", "class Option"),
    ("attributeName", "attributeName()"),
    ("Option.attributeName", "attributeName()"),
    ("parse flag", "function parseFlag(flags)"),
])
def test_an_identifier_query_puts_its_definition_first(indexed, project: Path, query: str,
                                                       defines: str) -> None:
    res = search(indexed, query, mode="keyword", limit=5, filters=Filters.build())
    assert res.hits, query
    first = indexed.store.get_node(res.hits[0].id)
    assert first.kind == "file_chunk" and first.source_uri.startswith((project / "flags.js").as_uri())
    assert defines in first.content, (query, [h.source_uri for h in res.hits])


def test_uses_still_match_after_the_definition(indexed, project: Path) -> None:
    res = search(indexed, "parseFlag", mode="keyword", limit=5, filters=Filters.build(kind="file_chunk"))
    uris = [h.source_uri.split("#", 1)[0] for h in res.hits]
    assert uris[0] == (project / "flags.js").as_uri()
    assert (project / "register.js").as_uri() in uris and (project / "README.md").as_uri() in uris


def test_the_name_as_typed_wins_over_one_that_differs_in_case_or_underscores(app, project: Path) -> None:
    f = project / "cmd.js"
    f.write_text(textwrap.dedent("""\
        // command() builds a Command; Command is used by command everywhere.
        function command(name) {
          return new Command(name);
        }

        function _command(name) {
          return command(name);
        }

        class Command {
          constructor(name) { this.name = name; }
        }
        """))
    read(app, str(f))
    for query, defines in (("Command", "class Command"), ("command", "function command("),
                           ("_command", "function _command(")):
        res = search(app, query, mode="keyword", limit=3, filters=Filters.build())
        assert defines in app.store.get_node(res.hits[0].id).content, query
