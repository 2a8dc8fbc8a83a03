"""Secrets the server must read back later (a booking's notebook token), sealed at rest.

Fernet (AES-128-CBC + HMAC-SHA256, from `cryptography`) under a key derived from SECRET_KEY and a
purpose string, so a database dump alone reveals none of them and a value sealed for one purpose
cannot be unsealed as another. Rotating SECRET_KEY makes old values unreadable: callers treat
`None` from `unseal` as "no secret" and issue a new one.
"""

from __future__ import annotations

import base64
import hashlib

from cryptography.fernet import Fernet, InvalidToken
from django.conf import settings


def _fernet(purpose: str) -> Fernet:
    digest = hashlib.sha256(f"labgpu-sealed:{purpose}:{settings.SECRET_KEY}".encode()).digest()
    return Fernet(base64.urlsafe_b64encode(digest))


def seal(value: str, *, purpose: str) -> str:
    return _fernet(purpose).encrypt(value.encode()).decode()


def unseal(sealed: str, *, purpose: str) -> str | None:
    """The value, or None when `sealed` is empty or was not sealed under this key and purpose."""
    if not sealed:
        return None
    try:
        return _fernet(purpose).decrypt(sealed.encode()).decode()
    except (InvalidToken, ValueError):
        return None
