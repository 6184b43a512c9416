"""Customer accounts: password hashing and session tokens."""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets

ITERATIONS = 390_000


def hash_password(password: str, salt: bytes | None = None) -> str:
    """PBKDF2-SHA256 with a random salt; the iteration count is stored with the hash."""
    salt = salt or os.urandom(16)
    digest = hashlib.pbkdf2_hmac("sha256", password.encode(), salt, ITERATIONS)
    return f"pbkdf2_sha256${ITERATIONS}${salt.hex()}${digest.hex()}"


def verify_password(password: str, stored: str) -> bool:
    """Constant-time comparison against a stored PBKDF2 hash."""
    _, iterations, salt_hex, digest_hex = stored.split("$")
    digest = hashlib.pbkdf2_hmac("sha256", password.encode(), bytes.fromhex(salt_hex), int(iterations))
    return hmac.compare_digest(digest.hex(), digest_hex)


def issue_session_token() -> str:
    """An opaque, URL-safe session token for the login cookie."""
    return secrets.token_urlsafe(32)
