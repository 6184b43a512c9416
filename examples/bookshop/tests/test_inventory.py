import pytest

from bookshop.inventory import Inventory, OutOfStock


def test_reserve_and_commit():
    inv = Inventory()
    inv.add_stock("9780306406157", 5)
    inv.reserve("9780306406157", 2)
    assert inv.available("9780306406157") == 3
    inv.commit("9780306406157", 2)
    assert inv.available("9780306406157") == 3


def test_cannot_reserve_more_than_available():
    inv = Inventory()
    inv.add_stock("9780306406157", 1)
    with pytest.raises(OutOfStock):
        inv.reserve("9780306406157", 2)


def test_low_stock_report_sorted():
    inv = Inventory()
    inv.add_stock("a", 10)
    inv.add_stock("b", 2)
    inv.add_stock("c", 1)
    assert inv.low_stock_report() == [("c", 1), ("b", 2)]
