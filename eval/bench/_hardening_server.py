"""One side of eval/bench/hardening.py: an ingest server of whichever memtree code is first on ``sys.path``
(the bench puts the "before" code there with PYTHONPATH), over a real App and store in $MEMTREE_HOME.

Prints ``READY <code dir> <ingest socket>`` once the hook can reach it, serves until stdin closes, then prints
``STORED <nodes>``.
"""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path


def main() -> None:
    project = Path(sys.argv[1])
    import memtree_core
    from memtree_core.app import App
    from memtree_core.daemon import ingest
    from memtree_plugins.lib import hook_sender

    app = App.open(project)
    sock = ingest.bind(app.paths, app.identity.root)
    stop = threading.Event()
    thread = threading.Thread(target=ingest.serve, args=(sock, app, stop), daemon=True)
    thread.start()
    for _ in range(400):
        if (app.paths.home / hook_sender.SENDER_FILE).exists():
            break
        time.sleep(0.05)
    print(f"READY {Path(memtree_core.__file__).parent} {app.paths.ingest_socket}", flush=True)
    sys.stdin.read()
    stop.set()
    thread.join(10)
    print(f"STORED {app.store.query_one('SELECT count(*) FROM nodes')[0]}", flush=True)  # type: ignore[index]
    app.close()


if __name__ == "__main__":
    main()
