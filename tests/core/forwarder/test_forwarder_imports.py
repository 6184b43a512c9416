"""``memtree_core.forwarder`` imports nothing but the standard library and itself (the daemon and the host may
import from it, never the reverse), and stays small enough to read in one sitting."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import memtree_core.forwarder

PACKAGE = Path(memtree_core.forwarder.__file__).parent
OWN = "memtree_core.forwarder"


def _foreign(module: str) -> bool:
    return not (module == OWN or module.startswith(OWN + ".") or module.split(".")[0] in sys.stdlib_module_names)


def test_every_import_is_the_standard_library_or_the_package_itself() -> None:
    found = []
    for path in sorted(PACKAGE.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""] if node.level == 0 else [f"(relative, level {node.level})"]
                if node.level == 0 and node.module == OWN.rpartition(".")[0]:
                    names = [f"{node.module}.{alias.name}" for alias in node.names]
            else:
                continue
            found += [f"{path.name}:{node.lineno}: {name}" for name in names if _foreign(name)]
    assert found == []


def test_importing_the_forwarder_loads_no_module_from_outside_the_standard_library() -> None:
    script = ("import sys\n"
              "before = set(sys.modules)\n"
              "import memtree_core.forwarder.main\n"
              "print('\\n'.join(sorted(set(sys.modules) - before)))\n")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=60)
    foreign = [m for m in out.stdout.split() if _foreign(m) and m != "memtree_core"]
    assert foreign == []

