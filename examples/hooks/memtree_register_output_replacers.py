"""An example plugin for ``memtree_register_output_replacers`` (docs/hooks.md shows it; a test loads it)."""

from memtree_core.hookspecs import hookimpl
from memtree_core.types import Replacement


class MakeSummary:
    name = "make-summary"

    def replace(self, app, payload, node_id, *, truncated=False):
        if payload["tool_input"].get("command") != "make":
            return Replacement(None, "not-make")  # the next replacer decides
        response = {**payload["tool_response"], "stdout": f"make: the whole log is node {node_id}\n"}
        return Replacement({"hookSpecificOutput": {"hookEventName": "PostToolUse",
                                                   "updatedToolOutput": response}}, "replaced")

    def delivered(self, app, outcome):
        pass  # count what the model was spared here


@hookimpl
def memtree_register_output_replacers(register):
    register(MakeSummary())
