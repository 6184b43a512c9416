from decimal import Decimal

import pytest

from bookshop.events import EventBus
from bookshop.inventory import Inventory
from bookshop.models import OrderLine, OrderStatus
from bookshop.orders import OrderService
from bookshop.payments import PaymentDeclined


class FakeGateway:
    def __init__(self, decline=False):
        self.decline = decline
        self.charges = []

    def charge(self, email, amount):
        if self.decline:
            raise PaymentDeclined("card declined")
        self.charges.append((email, amount))

    def refund(self, email, amount):
        pass


def test_declined_payment_releases_reservations():
    inv = Inventory()
    inv.add_stock("x", 2)
    svc = OrderService(inv, FakeGateway(decline=True), EventBus())
    with pytest.raises(PaymentDeclined):
        svc.place_order("a@example.com", [OrderLine("x", 2, Decimal("9.99"))], "GB")
    assert inv.available("x") == 2


def test_paid_order():
    inv = Inventory()
    inv.add_stock("x", 2)
    svc = OrderService(inv, FakeGateway(), EventBus())
    order = svc.place_order("a@example.com", [OrderLine("x", 1, Decimal("9.99"))], "GB")
    assert order.status is OrderStatus.PAID
