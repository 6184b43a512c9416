"""Card payments through the payment provider, with retries for transient failures."""

from __future__ import annotations

import random
import time
from decimal import Decimal


class PaymentDeclined(Exception):
    """The card issuer refused the charge; never retried."""


class ProviderUnavailable(Exception):
    """The provider timed out or answered 5xx; safe to retry with the same idempotency key."""


class PaymentGateway:
    """Charges and refunds through the provider's HTTP API."""

    MAX_ATTEMPTS = 4
    BASE_DELAY_S = 0.2

    def __init__(self, client, sleep=time.sleep) -> None:
        self.client = client
        self.sleep = sleep

    def charge(self, email: str, amount: Decimal) -> str:
        """Charge the customer's saved card; returns the provider's charge id."""
        key = f"charge-{email}-{amount}-{int(time.time() // 60)}"
        return self._with_retries(lambda: self.client.post("/charges", {"email": email, "amount": str(amount)},
                                                           idempotency_key=key))

    def refund(self, email: str, amount: Decimal) -> str:
        return self._with_retries(lambda: self.client.post("/refunds", {"email": email, "amount": str(amount)}))

    def _with_retries(self, call):
        """Retry transient provider failures with exponential backoff and full jitter."""
        for attempt in range(1, self.MAX_ATTEMPTS + 1):
            try:
                return call()
            except ProviderUnavailable:
                if attempt == self.MAX_ATTEMPTS:
                    raise
                delay = self.BASE_DELAY_S * (2 ** (attempt - 1))
                self.sleep(random.uniform(0, delay))
        raise AssertionError("unreachable")
