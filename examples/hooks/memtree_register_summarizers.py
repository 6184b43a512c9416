"""An example plugin for ``memtree_register_summarizers`` (docs/hooks.md shows it; a test loads it)."""

from memtree_core.hookspecs import hookimpl


class FirstLines:
    name = "first-lines"

    def available(self):
        return True, ""

    def summarize(self, nodes, app):
        return "\n".join(n.content.splitlines()[0] for n in nodes if n.content)


@hookimpl
def memtree_register_summarizers(register):
    register(FirstLines())
