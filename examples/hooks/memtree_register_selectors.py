"""An example plugin for ``memtree_register_selectors`` (docs/hooks.md shows it; a test loads it)."""

from memtree_core.hookspecs import hookimpl


class MakeErrors:
    name = "make-errors"
    priority = 10

    def matches(self, tool, command):
        return tool == "Bash" and command.startswith("make")

    def select(self, text, budget_tokens, count):
        kept = [line for line in text.splitlines() if "error" in line.lower()]
        while kept and count("\n".join(kept)) > budget_tokens:
            kept.pop()
        return "\n".join(kept)


@hookimpl
def memtree_register_selectors(register):
    register(MakeErrors())
