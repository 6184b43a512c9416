"""Persistence: books and orders in SQLite, with schema migrations."""

from __future__ import annotations

import sqlite3
from decimal import Decimal

from bookshop.models import Author, Book

MIGRATIONS = [
    "CREATE TABLE authors (id INTEGER PRIMARY KEY, name TEXT NOT NULL, country TEXT)",
    """CREATE TABLE books (isbn TEXT PRIMARY KEY, title TEXT NOT NULL, author_id INTEGER REFERENCES authors(id),
       price_cents INTEGER NOT NULL, stock INTEGER NOT NULL DEFAULT 0)""",
    "CREATE INDEX books_author ON books(author_id)",
    "ALTER TABLE books ADD COLUMN tags TEXT NOT NULL DEFAULT ''",
]


class BookRepository:
    """Reads and writes books; prices are stored as integer cents to avoid float rounding."""

    def __init__(self, path: str) -> None:
        self.conn = sqlite3.connect(path)
        self.migrate()

    def migrate(self) -> None:
        """Apply pending migrations in order, tracked by PRAGMA user_version."""
        version = self.conn.execute("PRAGMA user_version").fetchone()[0]
        for i, statement in enumerate(MIGRATIONS[version:], start=version + 1):
            with self.conn:
                self.conn.execute(statement)
                self.conn.execute(f"PRAGMA user_version = {i}")

    def save_book(self, book: Book) -> None:
        with self.conn:
            self.conn.execute("INSERT OR IGNORE INTO authors (id, name, country) VALUES (?, ?, ?)",
                              (book.author.id, book.author.name, book.author.country))
            self.conn.execute(
                "INSERT INTO books (isbn, title, author_id, price_cents, stock, tags) VALUES (?, ?, ?, ?, ?, ?) "
                "ON CONFLICT(isbn) DO UPDATE SET title = excluded.title, price_cents = excluded.price_cents, "
                "stock = excluded.stock, tags = excluded.tags",
                (book.isbn, book.title, book.author.id, int(book.price * 100), book.stock, ",".join(book.tags)))

    def find_by_isbn(self, isbn: str) -> Book | None:
        row = self.conn.execute(
            "SELECT b.isbn, b.title, b.price_cents, b.stock, b.tags, a.id, a.name, a.country "
            "FROM books b JOIN authors a ON a.id = b.author_id WHERE b.isbn = ?", (isbn,)).fetchone()
        if row is None:
            return None
        return Book(row[0], row[1], Author(row[5], row[6], row[7]), Decimal(row[2]) / 100, row[3],
                    [t for t in row[4].split(",") if t])

    def books_by_author(self, author_id: int) -> list[str]:
        return [r[0] for r in self.conn.execute("SELECT isbn FROM books WHERE author_id = ? ORDER BY title",
                                                (author_id,))]
