"""Prices: coupons, bulk discounts and VAT."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal

VAT_RATES = {"GB": Decimal("0.00"), "DE": Decimal("0.07"), "FR": Decimal("0.055"), "US": Decimal("0")}
CENT = Decimal("0.01")


@dataclass(frozen=True)
class Coupon:
    code: str
    percent_off: Decimal
    minimum_spend: Decimal = Decimal("0")


def apply_coupon(subtotal: Decimal, coupon: Coupon | None) -> Decimal:
    """Take a coupon's percentage off when the basket reaches its minimum spend."""
    if coupon is None or subtotal < coupon.minimum_spend:
        return subtotal
    discount = (subtotal * coupon.percent_off / 100).quantize(CENT, ROUND_HALF_UP)
    return subtotal - discount


def bulk_discount(quantity: int) -> Decimal:
    """Schools and book clubs buying many copies of one title get a tiered discount."""
    if quantity >= 50:
        return Decimal("0.20")
    if quantity >= 20:
        return Decimal("0.10")
    if quantity >= 10:
        return Decimal("0.05")
    return Decimal("0")


def compute_vat(amount: Decimal, country: str) -> Decimal:
    """Books carry a reduced VAT rate that depends on the delivery country."""
    try:
        rate = VAT_RATES[country.upper()]
    except KeyError:
        raise ValueError(f"no VAT rate for country {country!r}") from None
    return (amount * rate).quantize(CENT, ROUND_HALF_UP)


def price_order_line(unit_price: Decimal, quantity: int) -> Decimal:
    discount = bulk_discount(quantity)
    return (unit_price * quantity * (1 - discount)).quantize(CENT, ROUND_HALF_UP)
