"""The client's address, trusting forwarding headers only from proxies we run.

`X-Forwarded-For` is whatever the client wrote, plus one address per proxy it passed. Only a
proxy listed in LABGPU_TRUSTED_PROXIES (IPs or CIDRs) is believed: walking the header from the
right, we skip our own proxies and take the first address that is not one. A client talking to
gunicorn directly is its peer address (REMOTE_ADDR), whatever it sends.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Mapping
from functools import lru_cache

from django.conf import settings

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


@lru_cache(maxsize=8)
def _networks(entries: tuple[str, ...]) -> tuple[Network, ...]:
    return tuple(ipaddress.ip_network(entry, strict=False) for entry in entries)


def trusted_networks() -> tuple[Network, ...]:
    return _networks(tuple(settings.LABGPU_TRUSTED_PROXIES))


def _is_trusted(address: str, networks: Iterable[Network]) -> bool:
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    return any(ip in network for network in networks)


def client_ip(meta: Mapping[str, str]) -> str:
    """The address of whoever sent the request, as far as our own proxies can vouch for it."""
    peer = meta.get("REMOTE_ADDR", "") or "unknown"
    networks = trusted_networks()
    if not networks or not _is_trusted(peer, networks):
        return peer
    hops = [hop.strip() for hop in meta.get("HTTP_X_FORWARDED_FOR", "").split(",") if hop.strip()]
    for hop in reversed(hops):
        if not _is_trusted(hop, networks):
            return hop[:64]  # the first address our proxies did not add themselves
    return hops[0][:64] if hops else peer
