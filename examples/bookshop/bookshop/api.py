"""HTTP handlers for the storefront API (framework-free: each takes a request dict)."""

from __future__ import annotations

import json
from decimal import Decimal

from bookshop.cache import TTLCache
from bookshop.models import OrderLine
from bookshop.orders import OrderService
from bookshop.storage import BookRepository

page_cache = TTLCache(capacity=512, ttl_s=60)


def json_response(status: int, body: dict) -> tuple[int, dict[str, str], bytes]:
    return status, {"Content-Type": "application/json"}, json.dumps(body, default=str).encode()


def get_book(repo: BookRepository, isbn: str):
    """GET /books/{isbn}: the book page, cached for a minute."""
    cached = page_cache.get(f"book:{isbn}")
    if cached is not None:
        return json_response(200, cached)
    book = repo.find_by_isbn(isbn)
    if book is None:
        return json_response(404, {"error": f"no book with ISBN {isbn}"})
    body = {"isbn": book.isbn, "title": book.title, "author": book.author.name, "price": str(book.price),
            "in_stock": book.is_available()}
    page_cache.put(f"book:{isbn}", body)
    return json_response(200, body)


def create_order(service: OrderService, request: dict):
    """POST /orders: validates the basket, then places the order."""
    try:
        lines = [OrderLine(i["isbn"], int(i["quantity"]), Decimal(i["unit_price"])) for i in request["items"]]
    except (KeyError, ValueError, TypeError) as exc:
        return json_response(400, {"error": f"bad basket: {exc}"})
    if not lines:
        return json_response(400, {"error": "the basket is empty"})
    order = service.place_order(request["email"], lines, request.get("country", "GB"))
    return json_response(201, {"order_id": order.id, "status": order.status.value})
