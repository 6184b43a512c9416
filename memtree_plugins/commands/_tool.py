"""A command that is an MCP tool on the command line: the same function, found by the tool's name in the
registry (so it goes wherever plugins say), its answer printed as the agent reads it or as JSON."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from memtree_core.commands._common import open_app, print_json

if TYPE_CHECKING:
    from memtree_core.context import Context

DEFAULT_LIMIT = 10  # the retrieval plugin's default of ``search.defaultLimit``


def _default_limit(app: Context) -> int:
    """``search.defaultLimit``, the retrieval plugin's setting (its default when another plugin serves search)."""
    own = app.plugin_settings("retrieval")
    return own.search.default_limit if own is not None else DEFAULT_LIMIT


def call_tool(args: Any, name: str, builtin: str, *positional: Any, **arguments: Any) -> int:
    """Run the tool ``name`` (served by the built-in plugin ``builtin`` unless another replaced it) with these
    arguments and print its answer; a ``limit`` of None is the search's own default (``search.defaultLimit``,
    the retrieval plugin's setting)."""
    from memtree_core.errors import NotFound, UsageError

    app = open_app(args)
    try:
        spec = app.plugins.tools.get(name)
        if spec is None:
            raise UsageError(f"no plugin provides the {name} tool (is the {builtin!r} plugin disabled? "
                             "see memtree plugins)")
        if "limit" in arguments and arguments["limit"] is None:
            arguments["limit"] = _default_limit(app)
        result = spec.build(app)(*positional, **arguments)
    except ValueError as exc:
        raise NotFound(str(exc)) from None  # printed as one line, exit 2
    finally:
        app.close()
    if args.json:
        print_json(result.model_dump(mode="json"))
    else:
        print(result.render())
    return 0
