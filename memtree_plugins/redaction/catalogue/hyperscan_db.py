"""A Hyperscan database of the catalogue: one pass that says which rules can match a text at all, in front of
RE2 (:meth:`memtree_plugins.redaction.catalogue.matcher.Engine.findings`).

Measured on real library code (eval/bench/catalogue.py): the keyword prefilter leaves a handful of rules per
100 kB capture and RE2 runs each over the whole text; one Hyperscan pass over all of them costs less than
those RE2 passes, and RE2 then runs only for the rules Hyperscan saw match (a few per capture with secrets,
none on most).  RE2 still finds every span, secret group and check: Hyperscan only decides which rules run.

Hyperscan reads bytes.  Its match set is a superset of RE2's on ASCII text (``$`` before a final newline,
``\\s`` with vertical tab, laziness ignored: it reports more, never less), so it is used on ASCII text only;
other text runs every keyword-selected rule under RE2.

Building the database takes about a second here (several on slower machines), so it is never built on the
capture path: :func:`ensure` loads a cached copy (keyed by the rules' regexes, the hyperscan module's version
and the machine) when the engine is built, and once the engine has scanned a few megabytes (a daemon at
work, not a one-off command or a test) a background thread builds and caches it; RE2 alone serves until it
is ready.  A rule Hyperscan rejects always runs under RE2 (:attr:`Prefilter.rejected`).  Without the
``hyperscan`` module (no wheel for the platform) everything runs under RE2.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import platform
import threading
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

try:
    import hyperscan
except ImportError:  # optional: the engine runs under RE2 alone
    hyperscan = None

_building: set[str] = set()
_building_lock = threading.Lock()


class Prefilter:
    """Which of the selected rules Hyperscan sees match somewhere in ``data``; rules it rejected are kept."""

    def __init__(self, db: Any, rejected: set[int]) -> None:
        self.db = db
        self.rejected = rejected
        self._local = threading.local()

    def __call__(self, data: bytes, selected: list[int]) -> list[int]:
        try:
            scratch = self._local.scratch
        except AttributeError:  # one scratch per thread: Hyperscan's scratch space is not shared
            scratch = self._local.scratch = hyperscan.Scratch(self.db)
        hit: set[int] = set(self.rejected)

        def on_match(rule: int, _start: int, _end: int, _flags: int, _ctx: Any) -> None:
            hit.add(rule)

        self.db.scan(data, match_event_handler=on_match, scratch=scratch)
        return [i for i in selected if i in hit]


def key(regexes: list[str]) -> str:
    digest = hashlib.sha256("\0".join(regexes).encode()).hexdigest()[:24]
    version = hyperscan.__version__ if hyperscan is not None else "none"
    return f"{digest}-hs{version}-{platform.machine() or 'cpu'}"


def _compile(exprs: list[bytes], ids: list[int]) -> Any:
    db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
    db.compile(expressions=exprs, ids=ids, elements=len(exprs), flags=[hyperscan.HS_FLAG_SINGLEMATCH] * len(exprs))
    return db


def build(regexes: list[str], cache_dir: Path | None) -> Prefilter:
    """Compile the database (rule ``i`` is pattern id ``i``), write it to ``cache_dir`` if given."""
    exprs = [r.encode("utf-8") for r in regexes]
    ids = list(range(len(exprs)))
    rejected: set[int] = set()
    try:
        db = _compile(exprs, ids)
    except hyperscan.error:
        for i in ids:  # find the rules it rejects, compile the rest
            try:
                _compile([exprs[i]], [i])
            except hyperscan.error:
                rejected.add(i)
        keep = [i for i in ids if i not in rejected]
        db = _compile([exprs[i] for i in keep], keep)
    if cache_dir is not None:
        cache_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        base = cache_dir / key(regexes)
        for suffix, data in ((".json", json.dumps({"rejected": sorted(rejected)}).encode()),
                             (".hsdb", hyperscan.dumpb(db))):
            tmp = base.with_name(f".{base.name}{suffix}.{os.getpid()}.tmp")
            tmp.write_bytes(data)
            tmp.replace(base.with_name(base.name + suffix))
    return Prefilter(db, rejected)


def load(regexes: list[str], cache_dir: Path) -> Prefilter | None:
    """The cached database for these rules, or None (not built yet, or from another version)."""
    base = cache_dir / key(regexes)
    try:
        meta = json.loads(base.with_name(base.name + ".json").read_text())
        db = hyperscan.loadb(base.with_name(base.name + ".hsdb").read_bytes(), hyperscan.HS_MODE_BLOCK)
        return Prefilter(db, {int(i) for i in meta["rejected"]})
    except (OSError, ValueError, KeyError, TypeError, hyperscan.error):
        return None


def ensure(engine: Any, cache_dir: Path | None, wait: bool = False, build_it: bool = True
           ) -> threading.Thread | None:
    """Give ``engine`` its prefilter: the cached database now, or (``build_it``) a background build,
    returned so a caller that may wait, such as the benchmark, can join it.  Nothing without hyperscan or a
    cache directory."""
    if hyperscan is None or cache_dir is None:
        return None
    regexes = [c.rule.regex for c in engine.rules]
    cached = load(regexes, cache_dir)
    if cached is not None:
        engine.prefilter = cached
        return None
    if not build_it:
        return None
    k = f"{cache_dir}/{key(regexes)}"
    with _building_lock:
        if k in _building:
            return None
        _building.add(k)

    def run() -> None:
        try:
            engine.prefilter = build(regexes, cache_dir)
        except Exception:  # the engine keeps running under RE2 alone
            log.exception("could not build the Hyperscan database of the secret catalogue; RE2 alone runs it")
        finally:
            with _building_lock:
                _building.discard(k)

    thread = threading.Thread(target=run, name="memtree-hyperscan-build", daemon=True)
    thread.start()
    if wait:
        thread.join()
    return thread
