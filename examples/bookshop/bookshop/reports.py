"""Sales reports for the back office: revenue by month, bestsellers, returns and stock turnover."""

from __future__ import annotations

import csv
import io
import statistics
from collections import Counter, defaultdict
from datetime import date, datetime
from decimal import Decimal

from bookshop.models import Order, OrderStatus


def month_key(when: datetime) -> str:
    return f"{when.year:04d}-{when.month:02d}"


def monthly_revenue(orders: list[Order]) -> dict[str, Decimal]:
    """Revenue per calendar month from paid and shipped orders (refunds excluded)."""
    totals: dict[str, Decimal] = defaultdict(lambda: Decimal("0"))
    for order in orders:
        if order.status in (OrderStatus.PAID, OrderStatus.SHIPPED):
            totals[month_key(order.created_at)] += order.subtotal()
    return dict(sorted(totals.items()))


def bestsellers(orders: list[Order], top: int = 10) -> list[tuple[str, int]]:
    """The ISBNs that sold the most copies, with their counts."""
    copies: Counter[str] = Counter()
    for order in orders:
        if order.status is OrderStatus.CANCELLED:
            continue
        for line in order.lines:
            copies[line.isbn] += line.quantity
    return copies.most_common(top)


def refund_rate(orders: list[Order]) -> float:
    """Share of orders that ended refunded; the finance team watches this weekly."""
    if not orders:
        return 0.0
    refunded = sum(1 for o in orders if o.status is OrderStatus.REFUNDED)
    return refunded / len(orders)


def average_basket(orders: list[Order]) -> Decimal:
    values = [o.subtotal() for o in orders if o.status is not OrderStatus.CANCELLED]
    if not values:
        return Decimal("0")
    return (sum(values, Decimal("0")) / len(values)).quantize(Decimal("0.01"))


def median_lines_per_order(orders: list[Order]) -> float:
    counts = [len(o.lines) for o in orders]
    return statistics.median(counts) if counts else 0.0


def stock_turnover(units_sold: dict[str, int], average_stock: dict[str, float]) -> dict[str, float]:
    """Units sold divided by average stock held: how many times the shelf emptied in the period."""
    out = {}
    for isbn, sold in units_sold.items():
        avg = average_stock.get(isbn, 0.0)
        out[isbn] = round(sold / avg, 2) if avg else float("inf")
    return out


def customers_by_spend(orders: list[Order], top: int = 20) -> list[tuple[str, Decimal]]:
    spend: dict[str, Decimal] = defaultdict(lambda: Decimal("0"))
    for order in orders:
        if order.status in (OrderStatus.PAID, OrderStatus.SHIPPED):
            spend[order.customer_email] += order.subtotal()
    return sorted(spend.items(), key=lambda kv: kv[1], reverse=True)[:top]


def coupon_usage(orders: list[Order]) -> dict[str, int]:
    used: Counter[str] = Counter(o.coupon for o in orders if o.coupon)
    return dict(used)


def daily_order_counts(orders: list[Order], start: date, end: date) -> dict[date, int]:
    """Orders per day in [start, end], with zero for days without orders so charts have no gaps."""
    counts: dict[date, int] = {}
    day = start
    while day <= end:
        counts[day] = 0
        day = date.fromordinal(day.toordinal() + 1)
    for order in orders:
        d = order.created_at.date()
        if start <= d <= end:
            counts[d] += 1
    return counts


def to_csv(rows: list[tuple[object, ...]], header: tuple[str, ...]) -> str:
    """Render any report as CSV for the accountants' spreadsheet."""
    buf = io.StringIO()
    writer = csv.writer(buf)
    writer.writerow(header)
    writer.writerows(rows)
    return buf.getvalue()
