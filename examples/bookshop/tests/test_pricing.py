from decimal import Decimal

import pytest

from bookshop.pricing import Coupon, apply_coupon, bulk_discount, compute_vat


def test_coupon_needs_minimum_spend():
    c = Coupon("SPRING10", Decimal("10"), minimum_spend=Decimal("30"))
    assert apply_coupon(Decimal("20"), c) == Decimal("20")
    assert apply_coupon(Decimal("40"), c) == Decimal("36.00")


def test_bulk_discount_tiers():
    assert [bulk_discount(q) for q in (1, 10, 20, 50)] == [0, Decimal("0.05"), Decimal("0.10"), Decimal("0.20")]


def test_vat_unknown_country():
    with pytest.raises(ValueError, match="no VAT rate"):
        compute_vat(Decimal("10"), "XX")
