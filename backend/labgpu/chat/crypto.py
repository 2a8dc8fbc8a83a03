"""Channel secrets at rest: Fernet (AES-128-CBC + HMAC-SHA256) under LABGPU_CHANNEL_KEY.

LABGPU_CHANNEL_KEY is a comma-separated list of Fernet keys; the first encrypts, all decrypt
(MultiFernet), so a key is rotated by putting the new one first and, once `rotate_channel_keys`
has re-encrypted the rows, dropping the old one. Unset, a key is derived from SECRET_KEY
(docs/operations.md "Chat notifications").
"""

import base64
import hashlib
import json

from cryptography.fernet import Fernet, MultiFernet
from django.conf import settings


def _fernet() -> MultiFernet:
    keys = [key.strip() for key in settings.LABGPU_CHANNEL_KEY.split(",") if key.strip()]
    if not keys:
        digest = hashlib.sha256(b"labgpu.chat.channel-key:" + settings.SECRET_KEY.encode()).digest()
        keys = [base64.urlsafe_b64encode(digest).decode()]
    return MultiFernet([Fernet(key.encode()) for key in keys])


def seal(data: dict[str, str]) -> str:
    return _fernet().encrypt(json.dumps(data).encode()).decode()


def unseal(token: str) -> dict[str, str]:
    return json.loads(_fernet().decrypt(token.encode()))


def reseal(token: str) -> str:
    """The same secret under the first key (key rotation)."""
    return _fernet().rotate(token.encode()).decode()
