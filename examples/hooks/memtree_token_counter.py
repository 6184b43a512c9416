"""An example plugin for ``memtree_token_counter`` (docs/hooks.md shows it; a test loads it)."""

from memtree_core.hookspecs import hookimpl


class WordCounter:
    name = "words"

    def count(self, text):
        return len(text.split()) * 2  # never under-count badly


@hookimpl
def memtree_token_counter(settings):
    return WordCounter()
