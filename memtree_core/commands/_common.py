"""Helpers shared by subcommands."""

from __future__ import annotations

import json
import sys
from typing import Any


def open_app(args: Any):  # -> App; imported lazily so 'serve' never pays for it
    from memtree_core.app import App

    return App.open(args.project)


def print_json(value: Any) -> None:
    json.dump(value, sys.stdout, indent=2, sort_keys=False, default=str)
    sys.stdout.write("\n")
