"""Import a publisher's catalogue from CSV."""

from __future__ import annotations

import csv
from collections.abc import Iterator
from decimal import Decimal, InvalidOperation
from pathlib import Path

from bookshop.models import Author, Book


class ImportErrorRow(Exception):
    def __init__(self, line: int, reason: str) -> None:
        super().__init__(f"line {line}: {reason}")


def isbn13_is_valid(isbn: str) -> bool:
    """Check an ISBN-13: digits weighted 1,3,1,3,... must sum to a multiple of 10."""
    digits = isbn.replace("-", "")
    if len(digits) != 13 or not digits.isdigit():
        return False
    total = sum(int(d) * (1 if i % 2 == 0 else 3) for i, d in enumerate(digits))
    return total % 10 == 0


def parse_row(line: int, row: dict[str, str], authors: dict[str, Author]) -> Book:
    isbn = row.get("isbn", "").strip()
    if not isbn13_is_valid(isbn):
        raise ImportErrorRow(line, f"invalid ISBN-13 {isbn!r}")
    try:
        price = Decimal(row["price"])
    except (KeyError, InvalidOperation):
        raise ImportErrorRow(line, "price is missing or not a number") from None
    name = row.get("author", "").strip() or "Unknown"
    author = authors.setdefault(name, Author(len(authors) + 1, name))
    return Book(isbn.replace("-", ""), row.get("title", "").strip(), author, price, int(row.get("stock") or 0))


def read_catalogue(path: Path) -> Iterator[Book | ImportErrorRow]:
    """Yield a Book per good row and an ImportErrorRow per bad one, so one typo does not stop the import."""
    authors: dict[str, Author] = {}
    with path.open(newline="", encoding="utf-8") as fh:
        for line, row in enumerate(csv.DictReader(fh), start=2):
            try:
                yield parse_row(line, row, authors)
            except ImportErrorRow as err:
                yield err
