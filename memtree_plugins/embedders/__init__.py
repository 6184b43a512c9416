"""Built-in embedders: Ollama (``nomic-embed-text`` by default), ``minilm`` (all-MiniLM-L6-v2 int8 under
onnxruntime, shipped with memtree: what a plain install embeds with), ``local`` (the same model as a numpy
forward pass) and, by name only (``embeddingModel: "mpnet"``), an offline all-mpnet-base-v2.

The setting ``embeddingModel`` picks one by name (``ollama``, ``minilm``, ``local``) or model; ``"auto"`` (the
default) means: the model the store already holds, else Ollama when it answers, else ``minilm``, else
``local``, else keyword-only search with the reason (see :func:`memtree_plugins.lib.embedder_choice.choose_embedder`).
Nothing heavy is imported here: the local model and numpy load on first use.  Each embedder's
``configure(settings, app)`` is called by the host before it is used (:class:`memtree_core.types.Configurable`):
it takes ``ollamaUrl`` from this plugin's settings and ``embeddingModel`` and the batch size from the semantic
plugin's.
"""

from __future__ import annotations

from typing import Any

from memtree_core.hookspecs import hookimpl
from memtree_core.plugin_settings import BuiltinSettings
from memtree_plugins.embedders.local import LocalMiniLMEmbedder
from memtree_plugins.embedders.mpnet_local import LocalMPNetEmbedder
from memtree_plugins.embedders.ollama import OllamaEmbedder
from memtree_plugins.embedders.onnx_minilm import OnnxMiniLMEmbedder


@hookimpl(trylast=True)
def memtree_settings_model() -> type[BuiltinSettings]:
    # ``ollamaUrl``: memtree_plugins.embedders.settings
    from memtree_plugins.embedders.settings import EmbeddersSettings

    return EmbeddersSettings


@hookimpl(trylast=True)
def memtree_register_embedders(register: Any) -> None:
    register(OllamaEmbedder())
    # the default install's: MiniLM int8 under onnxruntime, its model shipped in memtree's wheel; then the
    # numpy pass, for stores that already hold its vectors
    register(OnnxMiniLMEmbedder())
    register(LocalMiniLMEmbedder())
    # after MiniLM, so "auto" never picks it: chosen by embeddingModel "mpnet" (several times MiniLM's cost)
    register(LocalMPNetEmbedder())
