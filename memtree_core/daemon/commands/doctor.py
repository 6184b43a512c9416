"""``memtree doctor``: what puts the project's data at risk, whether Claude Code's hooks feed the project's
captures and when the last one arrived, then the store: check it and recover a damaged one into a new file,
keeping the old one (``memtree_core.store.recover``).  The recovery needs the daemon stopped: it holds the store
open.

The risks are what weakens the protection of the user's data, each with its fix: redaction off or unavailable
(nothing is stored then), repository config keys refused, plugins that failed to load, what a repository's git
config asks for that memtree does not do, and captures the daemon refused or dropped (from the store's counters).
The capture report reads Claude Code's settings files itself (:mod:`memtree_core.daemon.claude_settings`): it
works with every plugin disabled, which is when a user most needs it.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

EXAMPLE = "memtree doctor --check-only --project ~/src/myapp"


def add_arguments(parser: Any) -> None:
    parser.add_argument("--check-only", action="store_true",
                        help="only check the store: exit 0 when sound, 1 when damaged")


# Store counters that mean something was refused or lost, and what to do about each.
RISK_COUNTERS = {
    "capture:persisted-output-refused": "Bash payloads named an output file outside Claude Code's tool-results "
                                        "directory; the file was not read (a hostile payload or transcript?)",
    "capture:dropped:redaction-unavailable": "captures were dropped because redaction was unavailable; see "
                                             "'memtree info'",
}


def risks(root: str) -> list[str]:
    """What weakens the protection of this project's data, in words a user can act on."""
    try:
        from memtree_core.app import App

        app = App.open(root)
    except Exception as exc:  # settings or plugins: the store part of doctor still runs
        return [f"settings or plugins could not load ({type(exc).__name__}: {exc}); 'memtree info' says more"]
    from memtree_core.daemon.redaction_gate import state_warning

    out = [line for line in [state_warning(app)] if line]
    out.extend(app.loaded.warnings)  # refused repository keys, ignored or unsafe config files
    for p in app.plugins.failures:
        if p.error:
            out.append(f"plugin {p.name} {p.status}: {p.error}")
        out.extend(f"plugin {p.name}: {f['kind']} {f['name']!r} failed: {f['error']}" for f in p.failed_items)
    out.extend(_git_config_notes(app.identity.root))
    return out


def _server_url(root: str) -> str:
    """The PostgreSQL URL the project's store is on (``MEMTREE_STORE_URL``, else ``store.url``), or ""."""
    from memtree_core.store.postgres.url import backend_of, store_url

    configured = ""
    try:
        from memtree_core.app import App

        configured = App.open(root).settings.store.url
    except Exception:
        pass  # said by risks(); the environment still counts
    url = store_url(configured, os.environ)
    try:
        return url if backend_of(url) == "postgresql" else ""
    except Exception:
        return ""


def _git_config_notes(root: Any) -> list[str]:
    """Repository git settings that run code, which memtree's own git calls switch off."""
    from memtree_core.daemon.project import _git

    notes = []
    for key in ("core.fsmonitor", "core.hooksPath"):
        value = _git(["config", "--local", "--get", key], root)
        if value:
            notes.append(f"the repository's git config sets {key} = {value.strip()[:80]!r}: memtree's git calls "
                         f"ignore it (fsmonitor off, no hooks); check it if you did not set it yourself")
    return notes


def _look(store: Path, url: str, key: str) -> Any:
    """The project's store opened read-only to look at: the local file, or its schema on the server ``url``
    names (``key``: the project's store key); ``StoreMissing`` when there is none yet."""
    if url:
        from memtree_core.store.postgres.store import PostgresStore

        return PostgresStore.open(url, key, path=store, readonly=True, pool_max=1)
    from memtree_core.store.readonly import open_readonly

    return open_readonly(store, vectors=False)


def _counter_risks(store: Path, url: str = "", key: str = "") -> list[str]:
    try:
        ro = _look(store, url, key)
        try:
            counters = ro.counters("capture:")
        finally:
            ro.close()
    except Exception:
        return []
    return [f"{counters[name]:,} {text}" for name, text in RISK_COUNTERS.items() if counters.get(name)]


def run(args: Any) -> int:
    from memtree_core.daemon.control import daemon_status, try_lock
    from memtree_core.daemon.project import identify
    from memtree_core.forwarder.paths import ProjectPaths, memtree_home
    from memtree_core.store import recover

    identity = identify(args.project or os.getcwd())
    paths = ProjectPaths.for_hash(memtree_home(), identity.hash)
    store = paths.store
    url = _server_url(str(identity.root))  # a server's store: its own checks; the local file is not in use
    found = risks(str(identity.root)) + (_counter_risks(store, url, identity.store_key)
                                         if url or store.exists() else [])
    print("risks:" if found else "risks: none found")
    for line in found:
        print(f"  ! {line}")
    for line in capture_report(Path(args.project or os.getcwd()).absolute(), identity.root, store, url,
                               identity.store_key):
        print(line)
    if url:
        from memtree_core.store.postgres.checks import check

        results = check(url, identity.store_key)
        for result in results:
            print(result.line())
        return 0 if all(r.ok for r in results) else 1
    if not store.exists():
        print(f"no store yet at {store}: nothing to check")
        return 0
    lock = try_lock(paths.lock)  # held while we work: no daemon can start and open the store meanwhile
    if lock is None:
        pid = daemon_status(paths).get("pid")
        print(f"memtree doctor: the daemon{f' (pid {pid})' if pid else ''} has the store open; run "
              f"'memtree stop --project {identity.root}' first", file=sys.stderr)
        return 2
    try:
        problems = recover.check(store)
        if not problems:
            print(f"store {store}: ok")
            return 0
        print(f"store {store}: DAMAGED ({'; '.join(' '.join(p.split()) for p in problems[:5])})")
        if args.check_only:
            print(f"run 'memtree doctor --project {identity.root}' to recover it into a new file")
            return 1
        try:
            result = recover.recover(store)
        except Exception as exc:  # nothing was changed: say so in one line
            print(f"memtree doctor: could not recover {store} ({type(exc).__name__}: {exc}); the file is "
                  f"untouched", file=sys.stderr)
            return 1
        rows = ", ".join(f"{table} {n}" for table, n in sorted(result.tables.items())) or "nothing readable"
        print(f"recovered by {result.method} into {store}: {rows}")
        for note in result.notes:
            print(f"  note: {note}")
        print(f"the damaged file is kept as {result.kept}")
        after = recover.check(store)
        if after:
            print(f"the recovered store still fails its check: {'; '.join(after[:3])}")
            return 1
        return 0
    finally:
        os.close(lock)


def capture_report(project: Path, root: Path, store: Path, url: str = "", key: str = "") -> list[str]:
    """Whether capture is wired (memtree's hooks in Claude Code's project or user settings, or the memtree
    plugin enabled there) and when the last capture reached the store (the local file, or on the server
    ``url`` names, the project's store of key ``key``)."""
    from memtree_core.daemon import claude_settings as cs

    sources = [*dict.fromkeys([*cs.project_settings(project), *cs.project_settings(root)]),
               cs.user_settings(os.environ)]
    found: dict[str, list[str]] = {}
    plugin = problems = None
    for path in sources:
        value, problem = cs.read_json(path)
        if problem:
            problems = f"{problem} (Claude Code cannot read it either)"
            continue
        for _event, script, _command in cs.hook_commands(value):
            found.setdefault(script, [])
            if str(path) not in found[script]:
                found[script].append(str(path))
        plugin = plugin or (f"the memtree plugin ({pid}, enabled in {path})" if (pid := cs.plugin_enabled(value))
                            else None)
    lines = []
    if "capture" in found or plugin:
        where = "; ".join(filter(None, [f"hooks in {', '.join(found['capture'])}" if "capture" in found else "",
                                        plugin]))
        lines.append(f"capture: wired ({where})")
        if "replace" not in found and not plugin:
            lines.append("output shrinking: no replacement hook; run 'memtree setup claude-code' to add it")
        if "capture" in found and plugin:
            lines.append("capture: both the plugin and settings hooks run, so each call is sent twice; keep one "
                         "('memtree setup claude-code --uninstall' removes the settings hooks)")
    else:
        lines.append("capture: NOT wired: no memtree hook in Claude Code's settings and the memtree plugin is not "
                     "enabled; run 'memtree setup claude-code' (or '--user' for every project)")
    if problems:
        lines.append(f"capture: {problems}")
    lines.append(f"last capture: {last_capture(store, url, key)}")
    return lines


def last_capture(store: Path, url: str = "", key: str = "") -> str:
    """When the newest hook capture was stored, and the captures accepted per tool (read-only; on the server
    ``url`` names when given)."""
    import time

    from memtree_core.store.store import StoreMissing

    if not url and not store.exists():
        return "none (no store yet)"
    try:
        ro = _look(store, url, key)
    except StoreMissing:
        return "none (no store yet)"
    except Exception as exc:
        return f"unknown (the store cannot be read: {exc})"
    try:
        counts = dict(ro.query("SELECT substr(name, 18), value FROM counters "
                               "WHERE name LIKE 'capture:accepted:%' AND value > 0 ORDER BY name"))
        # captures carry their hook event; the index on created_at finds the newest without a scan
        row = ro.query_one("SELECT created_at FROM nodes WHERE json_extract(metadata, '$.hook_event') "
                           "IS NOT NULL ORDER BY created_at DESC LIMIT 1")
    except Exception as exc:
        return f"unknown (the store cannot be read: {exc})"
    finally:
        ro.close()
    if row is None:
        return "none yet"
    ago = max(0, int(time.time() - row[0] / 1000))
    when = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(row[0] / 1000))
    span = (f"{ago // 86400} d" if ago >= 86400 else f"{ago // 3600} h" if ago >= 3600
            else f"{ago // 60} min" if ago >= 60 else f"{ago} s")
    per_tool = ", ".join(f"{tool} {n}" for tool, n in counts.items())
    return f"{when} ({span} ago){f'; accepted: {per_tool}' if per_tool else ''}"
