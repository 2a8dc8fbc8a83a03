"""Node-scoped tokens for the agent. Only hashes are stored.

The bootstrap token is derived (HMAC of the node id) rather than random so that a retried create,
which renders the same cloud-init, hands the adopted droplet the same token (I-4). It is accepted
once; the agent then gets a random heartbeat token.
"""

import hashlib
import hmac
import secrets

from django.conf import settings

BOOTSTRAP_PREFIX = "lgn_b_"
HEARTBEAT_PREFIX = "lgn_h_"


def hash_secret(raw: str) -> str:
    return hashlib.sha256(raw.encode()).hexdigest()


def bootstrap_token_for(node_id: int) -> str:
    key = settings.SECRET_KEY.encode()
    digest = hmac.new(key, f"labgpu-node-bootstrap:{node_id}".encode(), hashlib.sha256)
    return BOOTSTRAP_PREFIX + digest.hexdigest()


def new_heartbeat_token() -> str:
    return HEARTBEAT_PREFIX + secrets.token_urlsafe(32)
