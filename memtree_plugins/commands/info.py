"""``memtree info``: exactly what is working and what is degraded, and why."""

from __future__ import annotations

import platform
import sys
from typing import TYPE_CHECKING, Any

from memtree_core.commands._common import open_app, print_json

if TYPE_CHECKING:
    from memtree_core.context import Context

EXAMPLE = "memtree info --json --project ~/src/myrepo"


def add_arguments(parser: Any) -> None:
    parser.add_argument("--json", action="store_true", help="print one JSON object")


def vector_support(app: Context | None = None) -> dict[str, Any]:
    """A server's store says itself whether it has vectors (pgvector); for the local store (or without
    ``app``), really load sqlite-vec into a scratch connection: the same route the store uses."""
    from memtree_plugins.lib.store_place import on_server

    if app is not None and on_server(app):
        from memtree_core.store import StoreError

        try:
            v = app.store.vector
        except StoreError as exc:  # an unreachable server: said here, info goes on
            return {"available": False, "route": "server", "engine": "pgvector", "reason": str(exc)}
        return {"available": v.available, "route": v.route, "engine": "pgvector",
                **({} if v.available else {"reason": v.reason})}
    from memtree_core.store.sqlite_route import probe

    found = probe()
    out: dict[str, Any] = {"available": found.vec_loaded, "route": found.route.name,
                           "sqlite_version": found.sqlite_version}
    if found.vec_loaded:
        out["sqlite_vec"] = found.vec_version
    else:
        out["reason"] = found.reason
    return out


def grep_engine() -> dict[str, Any]:
    from memtree_plugins.lib.ripgrep import find_rg

    rg = find_rg()
    return {"engine": "ripgrep" if rg else "python", "path": rg,
            **({} if rg else {"reason": "rg not found (pip install ripgrep); grep uses the slower Python fallback"})}


def bounds(app: Context) -> dict[str, Any]:
    """The fixed resource bounds of tool calls and captures: each registered tool's own, then
    the host's."""
    from memtree_core.daemon import ingest
    from memtree_core.daemon.limits import TOOL_THREADS

    tools: dict[str, Any] = {}
    for spec in app.plugins.tools:
        if spec.limits is not None:
            tools.update(spec.limits())
    return {**tools, "tool_threads": TOOL_THREADS, "capture_connections": ingest.MAX_CONNECTIONS,
            "big_capture_slots": ingest.BIG_CAPTURE_SLOTS, "big_capture_bytes": ingest.BIG_CAPTURE_BYTES,
            "capture_max_payload_bytes": ingest.MAX_PAYLOAD_BYTES, "capture_read_deadline_s": ingest.READ_DEADLINE_S}


def embedder_status(app: Context) -> dict[str, Any]:
    """Which embedder semantic search would use, or why none (never loads a model): every embedder in the
    registry is a candidate, a third party's too."""
    if "embedder_status" not in app.state:
        from memtree_plugins.lib.embedder_choice import choose_embedder, configured_model
        from memtree_plugins.lib.store_place import store_exists

        models = None if store_exists(app) and _reachable(app) else []
        choice = choose_embedder(app, models)
        e = choice.embedder
        app.state["embedder_status"] = {
            "available": e is not None, "setting": configured_model(app),
            **({"name": e.name, "model": e.model, "dim": e.dim, "why": choice.reason} if e
               else {"reason": choice.reason})}
    return app.state["embedder_status"]


def _reachable(app: Context) -> bool:
    """Whether the store opens (a server's may be unreachable: ``vector_support`` says why)."""
    from memtree_core.store import StoreError

    try:
        _ = app.store
    except StoreError:
        return False
    return True


def vector_index(app: Context) -> dict[str, Any]:
    """What KNN searches over: the vectors, and the binary codes of the two-stage search (which must cover
    every vector: triggers on ``nodes_vec`` keep them; a store from before them gets them at its first
    search)."""
    from memtree_plugins.lib.store_place import on_server, store_exists

    if not store_exists(app) or not app.store.vector.available:
        return {"vectors": 0, "codes": 0, "state": "no vectors"}
    if on_server(app):  # no codes in RAM there: the server's HNSW index answers
        row = app.store.query_one("SELECT count(*) FROM nodes_vec")
        n = int(row[0]) if row else 0
        return {"vectors": n, "codes": 0, "state": "HNSW index per embedding model on the server (pgvector)"
                if n else "no vectors"}
    from memtree_core.store import vector_codes as codes

    if not codes.present(app.store):  # type: ignore[arg-type]
        n = int((app.store.query_one("SELECT count(*) FROM nodes_vec") or (0,))[0])
        return {"vectors": n, "codes": 0, "state": "exact vec0 KNN only; binary codes are built at the next "
                                                   "semantic search" if n else "no vectors"}
    n_codes, n_vecs = codes.counts(app.store)  # type: ignore[arg-type]
    ok, why = codes.usable()
    state = (f"exact vec0 KNN only: {why}" if not ok else
             "two-stage KNN: Hamming over binary codes in RAM, exact re-score from the vectors"
             if n_codes == n_vecs else f"binary codes cover {n_codes} of {n_vecs} vectors: some vectors "
                                       f"cannot be found by the two-stage search; run `memtree reembed`")
    return {"vectors": n_vecs, "codes": n_codes, "state": state}


def capture_status(app: Context) -> dict[str, Any]:
    """What the Claude Code hook uses to reach the daemon, what it could not deliver, and replacement."""
    from memtree_plugins.lib import hook_sender

    home = app.paths.home
    try:
        sender = (home / hook_sender.SENDER_FILE).read_text().splitlines()[:2]
    except OSError:
        sender = []
    out: dict[str, Any] = {
        "hook_sender": " ".join(sender) if sender else "not chosen yet (the daemon picks it when it starts)",
        "hook_drops": hook_sender.drop_counts(home),
        "bash": app.settings.capture.bash,
        "replace": _replace_enabled(app),
    }
    return out


def _replace_enabled(app: Context) -> bool:
    """``capture.replace``: the selectors plugin's setting (off while that plugin is not loaded)."""
    own = app.plugin_settings("selectors")
    return own.capture.replace.enabled if own is not None else False


def code_chunking(app: Context) -> dict[str, Any]:
    """Which languages are chunked by definition, and which fall back to windows (and why)."""
    status: dict[str, str | None] = {}
    for chunker in app.plugins.chunkers:
        report = getattr(chunker, "availability", None)
        if callable(report):
            status.update(report())
    return {"by_definition": sorted(k for k, v in status.items() if v is None),
            "windows": {k: v for k, v in sorted(status.items()) if v is not None}}


def gather(app: Context) -> dict[str, Any]:
    from memtree_core import __version__
    from memtree_core.daemon.control import daemon_status
    from memtree_plugins.commands import destinations, protections
    from memtree_plugins.lib.store_place import store_exists

    vec = vector_support(app)
    vector_search: dict[str, Any] = {"available": vec["available"], **vec}
    degraded = _degraded(app, vector_search)
    return {
        "version": __version__,
        "python": f"{platform.python_implementation()} {platform.python_version()} ({sys.executable})",
        "project_hash": app.identity.hash,
        "project_root": str(app.identity.root),
        "project_identity": "git root + first commit" if app.identity.git else "absolute path (not a git repo)",
        "store": str(app.paths.store),
        "store_exists": store_exists(app),
        "store_url": _store_url(app),
        "socket": str(app.paths.ingest_socket),
        "mcp_socket": str(app.paths.mcp_socket),
        "vector_search": vector_search,
        "vector_index": vector_index(app) if vec["available"] else {"vectors": 0, "codes": 0, "state": "off"},
        "embedder": embedder_status(app),
        "capture": capture_status(app),
        "grep": grep_engine(),
        "bounds": bounds(app),
        "code_chunking": code_chunking(app),
        "daemon": daemon_status(app.paths),
        "plugins": [p.as_dict() for p in app.plugins.report],
        "config_files": app.loaded.files,
        "config_warnings": app.loaded.warnings,
        "token_counter": getattr(app.plugins.token_counter, "name", type(app.plugins.token_counter).__name__),
        "degraded": degraded,
        "network_destinations": [d.as_dict() for d in destinations.in_effect(app)],
        "warnings": protections.warnings(app, degraded),
    }


def _degraded(app: Context, vector_search: dict[str, Any]) -> list[str]:
    out = []
    if not vector_search["available"]:
        out.append(f"vector search off: {vector_search.get('reason')}")
    emb = embedder_status(app)
    if vector_search["available"] and not emb["available"]:
        out.append(f"semantic search off (keyword only): {emb['reason']}")
    windows = code_chunking(app)["windows"]
    if windows:
        out.append("200-line windows, not definitions, for " + ", ".join(windows) + ": grammar missing ("
                   + next(iter(windows.values())) + "); pip install 'memtree-mcp' brings tree-sitter grammars")
    for p in app.plugins.failures:
        if p.error:
            out.append(f"plugin {p.name} {p.status}: {p.error}")
        out.extend(f"plugin {p.name}: {f['kind']} {f['name']!r} failed: {f['error']}" for f in p.failed_items)
    if not app.settings.capture.bash:
        out.append("Bash capture is off (capture.bash = false)")
    out.extend(app.loaded.warnings)
    out.extend(_socket_dir_problems(app))
    for kind, reg in app.plugins.registries.items():
        for name, by in reg.removed.items():
            out.append(f"{kind} {name!r} removed by plugin {by}")
    return out


def _store_url(app: Context) -> str:
    """The store URL in effect (``MEMTREE_STORE_URL`` or ``store.url``), its password hidden; "" for none."""
    from memtree_core.store.postgres.url import redact_url, store_url

    return redact_url(store_url(app.settings.store.url))


def _socket_dir_problems(app: Context) -> list[str]:
    """A fallback socket directory memtree would refuse (the project's own is made by memtree itself)."""
    import os

    from memtree_core.forwarder.paths import dir_problem

    dirs = dict.fromkeys(s.parent for s in (app.paths.ingest_socket, app.paths.mcp_socket))
    return [p for d in dirs if d != app.paths.dir and os.path.lexists(d) and (p := dir_problem(d))]


def _bounds_line(b: dict[str, Any]) -> str:
    mb = 1024 * 1024
    return (f"grep {b['grep_timeout_s']:g} s, files <= {b['grep_max_file_bytes'] // mb} MB; bash "
            f"{b['bash_timeout_s']:g} s (max {b['bash_max_timeout_s']:g} s), children ended on timeout; "
            f"{b['tool_threads']} tool threads; captures <= {b['capture_max_payload_bytes'] // mb} MB in "
            f"{b['capture_read_deadline_s']:g} s, {b['capture_connections']} connections (idlest evicted), "
            f"{b['big_capture_slots']} at a time over {b['big_capture_bytes'] // mb} MB")


def run(args: Any) -> int:
    app = open_app(args)
    if app.paths.store.exists():
        _ = app.store  # a damaged store: one line naming 'memtree doctor' (StoreDamaged), exit status 2
    info = gather(app)
    if args.json:
        print_json(info)
        return 0
    vs = info["vector_search"]
    # Whatever is ignored, degraded or off comes first, where it cannot be missed.
    lines = (["WARNING:", *(f"  ! {w}" for w in info["warnings"]), ""] if info["warnings"] else []) + [
        f"memtree {info['version']}  ({info['python']})",
        f"project   {info['project_root']}  [{info['project_hash']}, {info['project_identity']}]",
        f"store     {info['store_url']}  (store.url)" if info["store_url"] else
        f"store     {info['store']}{'' if info['store_exists'] else '  (not created yet)'}",
        f"sockets   ingest {info['socket']}",
        f"          mcp    {info['mcp_socket']}",
        f"daemon    {'running, pid ' + str(info['daemon']['pid']) if info['daemon']['running'] else 'not running'}",
        "vectors   " + ("available (pgvector on the server)" if vs["available"] and vs.get("engine") == "pgvector"
                        else f"available (sqlite-vec {vs.get('sqlite_vec')} via {vs['route']}, SQLite "
                        f"{vs['sqlite_version']})" if vs["available"] else f"UNAVAILABLE: {vs.get('reason')}"),
        f"knn       {info['vector_index']['vectors']} vectors, {info['vector_index']['codes']} binary codes: "
        f"{info['vector_index']['state']}",
        "embedder  " + (f"{info['embedder']['name']} ({info['embedder']['model']}; {info['embedder']['why']})"
                        if info["embedder"]["available"] else f"NONE, keyword search only: {info['embedder']['reason']}"),
        f"grep      {info['grep']['engine']}" + (f" ({info['grep']['path']})" if info["grep"]["path"] else ""),
        f"capture   hook sender {info['capture']['hook_sender']}; Bash capture "
        f"{'on' if info['capture']['bash'] else 'OFF'}; output replacement "
        f"{'on' if info['capture']['replace'] else 'off'}"
        + (f"; undelivered: {', '.join(f'{k} {v}' for k, v in info['capture']['hook_drops'].items())}"
           if info["capture"]["hook_drops"] else ""),
        "chunking  by definition: " + (", ".join(info["code_chunking"]["by_definition"]) or "none")
        + (f"; windows only: {', '.join(info['code_chunking']['windows'])}" if info["code_chunking"]["windows"]
           else ""),
        f"tokens    {info['token_counter']}",
        "bounds    " + _bounds_line(info["bounds"]),
        "config    " + (", ".join(info["config_files"]) or "defaults only"),
        "plugins   " + ", ".join(f"{p['name']}({p['status']})" for p in info["plugins"]),
        "network   " + ("; ".join(f"{d['what']} -> {d['url']} ({'this machine' if d['local'] else 'ANOTHER MACHINE'}, "
                                  f"{'active' if d['active'] else 'inactive'}, set by {d['origin']})"
                                  for d in info["network_destinations"]) or "no destinations"),
    ]
    if info["warnings"]:
        lines.append("degraded: see WARNING at the top")
    else:
        lines.append("everything is working")
    print("\n".join(lines))
    return 0
