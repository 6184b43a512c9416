"""The npm tools some tests drive (``claude plugin validate``, the MCP Inspector CLI), at the versions pinned
in the repository's ``package.json``.

``npm ci`` at the repository root installs them into ``node_modules/`` (gitignored); CI runs it before the
tests.  Without that install the tests fall back to ``npx --yes <package>@<pin>``, which downloads the pinned
version.  Without ``npx`` at all the tests that need one are skipped and say so.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PINS: dict[str, str] = json.loads((REPO / "package.json").read_text())["devDependencies"]


def npm_tool(package: str, bin_name: str) -> list[str]:
    """The argv prefix that runs ``bin_name`` from ``package`` at its pinned version."""
    pin = PINS[package]
    local = REPO / "node_modules" / ".bin" / bin_name
    if local.exists():
        installed = json.loads((REPO / "node_modules" / package / "package.json").read_text())["version"]
        assert installed == pin, (f"node_modules has {package} {installed} but package.json pins {pin}: "
                                  f"run `npm ci` at the repository root")
        return [str(local)]
    npx = shutil.which("npx")
    if npx is None:
        pytest.skip(f"npx not found: install Node.js and run `npm ci` at the repository root to test with "
                    f"{package}@{pin}")
    return [npx, "--yes", "--package", f"{package}@{pin}", "--", bin_name]
