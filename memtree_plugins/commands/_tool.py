"""A command that is an MCP tool on the command line: the same function, found by the tool's name in the
registry (so it goes wherever plugins say), its answer printed as the agent reads it or as JSON."""

from __future__ import annotations

from typing import Any

from memtree_core.commands._common import open_app, print_json


def call_tool(args: Any, name: str, **arguments: Any) -> int:
    from memtree_core.errors import NotFound, UsageError

    app = open_app(args)
    try:
        spec = app.plugins.tools.get(name)
        if spec is None:
            raise UsageError(f"no plugin provides the {name!r} tool (is the plugin that serves it disabled? "
                             "see memtree plugins)")
        result = spec.build(app)(**arguments)
    except ValueError as exc:
        raise NotFound(str(exc)) from None  # printed as one line, exit 2
    finally:
        app.close()
    if args.json:
        print_json(result.model_dump(mode="json"))
    else:
        print(result.render())
    return 0
