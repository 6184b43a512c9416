"""Domain models: books, authors, order lines and orders."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from enum import Enum


class OrderStatus(Enum):
    PENDING = "pending"
    PAID = "paid"
    SHIPPED = "shipped"
    CANCELLED = "cancelled"
    REFUNDED = "refunded"


@dataclass(frozen=True)
class Author:
    """A book's author."""

    id: int
    name: str
    country: str | None = None


@dataclass
class Book:
    """A title we sell, identified by its ISBN-13."""

    isbn: str
    title: str
    author: Author
    price: Decimal
    stock: int = 0
    tags: list[str] = field(default_factory=list)

    def is_available(self) -> bool:
        return self.stock > 0


@dataclass
class OrderLine:
    isbn: str
    quantity: int
    unit_price: Decimal

    @property
    def total(self) -> Decimal:
        return self.unit_price * self.quantity


@dataclass
class Order:
    """A customer's order; totals are computed from its lines."""

    id: str
    customer_email: str
    lines: list[OrderLine]
    status: OrderStatus = OrderStatus.PENDING
    created_at: datetime = field(default_factory=datetime.utcnow)
    coupon: str | None = None

    def subtotal(self) -> Decimal:
        return sum((line.total for line in self.lines), Decimal("0"))
