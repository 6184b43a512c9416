"""The sample project ``memtree demo`` runs on when no ``--project`` is given (and the eval indexes): a small
bookshop in seven languages, shipped in the wheel as package data so an installed demo needs no checkout."""

from pathlib import Path

BOOKSHOP = Path(__file__).resolve().parent / "bookshop"
