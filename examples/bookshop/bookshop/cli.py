"""Command line: serve the API, run migrations, import a catalogue."""

from __future__ import annotations

import argparse
from pathlib import Path

from bookshop.importers.csv_import import ImportErrorRow, read_catalogue
from bookshop.storage import BookRepository


def import_catalogue(repo: BookRepository, path: Path) -> tuple[int, list[str]]:
    """Import every good row; report bad rows instead of stopping at the first one."""
    imported, errors = 0, []
    for item in read_catalogue(path):
        if isinstance(item, ImportErrorRow):
            errors.append(str(item))
        else:
            repo.save_book(item)
            imported += 1
    return imported, errors


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bookshop")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("migrate")
    imp = sub.add_parser("import-csv")
    imp.add_argument("path", type=Path)
    serve = sub.add_parser("serve")
    serve.add_argument("--port", type=int, default=8080)
    args = parser.parse_args(argv)
    repo = BookRepository("bookshop.db")
    if args.command == "import-csv":
        n, errors = import_catalogue(repo, args.path)
        print(f"imported {n} books, {len(errors)} bad rows")
        for e in errors:
            print("  " + e)
    return 0
