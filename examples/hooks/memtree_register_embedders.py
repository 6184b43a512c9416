"""An example plugin for ``memtree_register_embedders`` (docs/hooks.md shows it; a test loads it)."""

from memtree_core.hookspecs import hookimpl


class HashEmbedder:
    name = "hash"
    model = "hash-8"
    dim = 8

    def available(self):
        return True, ""

    def embed(self, texts):
        return [[((hash(t) >> i) & 1) * 1.0 for i in range(self.dim)] for t in texts]


@hookimpl
def memtree_register_embedders(register):
    register(HashEmbedder())
