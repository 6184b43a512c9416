"""Service configuration from environment variables."""

from __future__ import annotations

import os
from dataclasses import dataclass


@dataclass(frozen=True)
class Config:
    database_url: str
    payment_api_url: str
    payment_api_key: str
    cache_ttl_s: int = 60
    debug: bool = False


def load_config(environ: dict[str, str] | None = None) -> Config:
    """Read BOOKSHOP_* variables; a missing required variable names itself in the error."""
    env = os.environ if environ is None else environ
    missing = [v for v in ("BOOKSHOP_DATABASE_URL", "BOOKSHOP_PAYMENT_API_KEY") if not env.get(v)]
    if missing:
        raise RuntimeError(f"set {', '.join(missing)} (see docs/deployment.md)")
    return Config(
        database_url=env["BOOKSHOP_DATABASE_URL"],
        payment_api_url=env.get("BOOKSHOP_PAYMENT_API_URL", "https://payments.example.com/v1"),
        payment_api_key=env["BOOKSHOP_PAYMENT_API_KEY"],
        cache_ttl_s=int(env.get("BOOKSHOP_CACHE_TTL_S", "60")),
        debug=env.get("BOOKSHOP_DEBUG") == "1",
    )
