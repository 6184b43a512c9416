"""The order lifecycle: place, pay, ship, cancel and refund."""

from __future__ import annotations

import logging
import uuid
from decimal import Decimal

from bookshop.events import EventBus
from bookshop.inventory import Inventory, OutOfStock
from bookshop.models import Order, OrderLine, OrderStatus
from bookshop.payments import PaymentDeclined, PaymentGateway
from bookshop.pricing import Coupon, apply_coupon, compute_vat

log = logging.getLogger(__name__)


class OrderError(Exception):
    pass


class OrderService:
    """Coordinates inventory reservations, payment and events for each order."""

    def __init__(self, inventory: Inventory, payments: PaymentGateway, events: EventBus) -> None:
        self.inventory = inventory
        self.payments = payments
        self.events = events
        self.orders: dict[str, Order] = {}

    def place_order(self, email: str, lines: list[OrderLine], country: str,
                    coupon: Coupon | None = None) -> Order:
        """Reserve stock for every line, charge the card, then commit the reservation.

        If any reservation fails, the ones already made are released; if the payment is declined, every
        reservation is released and the order is cancelled.
        """
        order = Order(id=str(uuid.uuid4()), customer_email=email, lines=lines)
        reserved: list[OrderLine] = []
        try:
            for line in lines:
                self.inventory.reserve(line.isbn, line.quantity)
                reserved.append(line)
        except OutOfStock:
            for line in reserved:
                self.inventory.release(line.isbn, line.quantity)
            raise
        total = apply_coupon(order.subtotal(), coupon)
        total += compute_vat(total, country)
        try:
            self.payments.charge(email, total)
        except PaymentDeclined:
            for line in reserved:
                self.inventory.release(line.isbn, line.quantity)
            order.status = OrderStatus.CANCELLED
            self.events.publish("order.cancelled", order.id)
            raise
        for line in reserved:
            self.inventory.commit(line.isbn, line.quantity)
        order.status = OrderStatus.PAID
        self.orders[order.id] = order
        self.events.publish("order.paid", order.id)
        return order

    def cancel_order(self, order_id: str) -> Order:
        """Cancel an order that has not shipped yet and refund it in full."""
        order = self._get(order_id)
        if order.status is OrderStatus.SHIPPED:
            raise OrderError("a shipped order cannot be cancelled; ask for a return instead")
        if order.status is OrderStatus.PAID:
            self.refund(order_id, order.subtotal())
        order.status = OrderStatus.CANCELLED
        return order

    def refund(self, order_id: str, amount: Decimal) -> None:
        order = self._get(order_id)
        self.payments.refund(order.customer_email, amount)
        order.status = OrderStatus.REFUNDED
        self.events.publish("order.refunded", order.id)

    def mark_shipped(self, order_id: str, tracking_number: str) -> None:
        order = self._get(order_id)
        order.status = OrderStatus.SHIPPED
        log.info("order %s shipped with tracking %s", order_id, tracking_number)
        self.events.publish("order.shipped", order.id)

    def _get(self, order_id: str) -> Order:
        try:
            return self.orders[order_id]
        except KeyError:
            raise OrderError(f"unknown order {order_id}") from None
