"""Stock keeping: how many copies of each ISBN we hold, reserve and release."""

from __future__ import annotations

import threading
from collections import defaultdict


class OutOfStock(Exception):
    """Raised when a reservation asks for more copies than are on the shelf."""

    def __init__(self, isbn: str, wanted: int, available: int) -> None:
        super().__init__(f"{isbn}: wanted {wanted}, only {available} left")
        self.isbn = isbn
        self.wanted = wanted
        self.available = available


class Inventory:
    """Thread-safe stock levels with reservations held during checkout."""

    LOW_STOCK_THRESHOLD = 3

    def __init__(self) -> None:
        self._stock: dict[str, int] = defaultdict(int)
        self._reserved: dict[str, int] = defaultdict(int)
        self._lock = threading.Lock()

    def add_stock(self, isbn: str, copies: int) -> int:
        """Receive a delivery from the publisher; returns the new shelf count."""
        if copies <= 0:
            raise ValueError("copies must be positive")
        with self._lock:
            self._stock[isbn] += copies
            return self._stock[isbn]

    def available(self, isbn: str) -> int:
        with self._lock:
            return self._stock[isbn] - self._reserved[isbn]

    def reserve(self, isbn: str, copies: int) -> None:
        """Hold copies for an order in checkout so two customers cannot buy the last copy."""
        with self._lock:
            free = self._stock[isbn] - self._reserved[isbn]
            if copies > free:
                raise OutOfStock(isbn, copies, free)
            self._reserved[isbn] += copies

    def release(self, isbn: str, copies: int) -> None:
        """Give back a reservation when checkout is abandoned or the payment fails."""
        with self._lock:
            self._reserved[isbn] = max(0, self._reserved[isbn] - copies)

    def commit(self, isbn: str, copies: int) -> None:
        """Turn a reservation into a sale: the copies leave the shelf."""
        with self._lock:
            self._reserved[isbn] -= copies
            self._stock[isbn] -= copies

    def low_stock_report(self) -> list[tuple[str, int]]:
        """ISBNs at or below the reorder threshold, lowest first."""
        with self._lock:
            rows = [(isbn, n - self._reserved[isbn]) for isbn, n in self._stock.items()]
        return sorted((r for r in rows if r[1] <= self.LOW_STOCK_THRESHOLD), key=lambda r: r[1])
