"""The one egress policy: every outbound HTTP call LabGPU makes (chat webhooks, OpenID discovery,
JWKS, token and userinfo, the provider API) and the LDAP server address go through `POLICY`.

A URL's host is resolved once; every address it resolves to is checked — IPv4, and each IPv6 form
that carries an IPv4 address (mapped, compatible, SIIT-translated, NAT64, 6to4, Teredo) with the
embedded address checked too — against loopback, private, link-local, CGNAT, ULA, multicast,
unspecified, documentation and reserved ranges (the IANA special-purpose registries). The request
then connects to the checked address without resolving again (DNS rebinding cannot swap it), with
the name kept for TLS (SNI, certificate check) and the Host header. Redirects are never followed
by the clients; a redirect a client did follow would pass through the same check.

Explicit opt-ins, decided by each caller from the operator's settings (`Exemptions`): loopback
addresses for tests and the demo (LABGPU_CHAT_ALLOW_LOOPBACK), and origins the operator listed
(LABGPU_PROVIDER_ALLOWED_BASE_URLS, the configured OpenID issuer and LDAP server), which may be
internal. Nothing else a user, a platform or a discovery document names may reach inside.

No Django here: the provider drivers, which need none, use it as well (docs/security.md).
"""

from __future__ import annotations

import ipaddress
import re
import socket
import urllib.parse
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import httpx

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
#: host, port → the addresses it resolves to (socket.getaddrinfo in production; tests swap in
#: a resolver that answers like a hostile DNS server).
Resolver = Callable[[str, int], list[str]]

_DEFAULT_PORTS = {"http": 80, "https": 443, "ldap": 389, "ldaps": 636}

# Ranges no outbound call may reach, whatever Python's `is_global` says in its version (3.11
# calls ::127.0.0.1 and 64:ff9b:1::/48 global). IANA IPv4/IPv6 special-purpose address registries:
# https://www.iana.org/assignments/iana-ipv4-special-registry/
# https://www.iana.org/assignments/iana-ipv6-special-registry/
_REFUSED_V4 = [
    (ipaddress.ip_network(net), why)
    for net, why in [
        ("0.0.0.0/8", "unspecified"),
        ("10.0.0.0/8", "private"),
        ("100.64.0.0/10", "shared (CGNAT)"),
        ("127.0.0.0/8", "loopback"),
        ("169.254.0.0/16", "link-local"),
        ("172.16.0.0/12", "private"),
        ("192.0.0.0/24", "IETF protocol assignments"),
        ("192.0.2.0/24", "documentation"),
        ("192.88.99.0/24", "6to4 relay anycast"),
        ("192.168.0.0/16", "private"),
        ("198.18.0.0/15", "benchmarking"),
        ("198.51.100.0/24", "documentation"),
        ("203.0.113.0/24", "documentation"),
        ("224.0.0.0/4", "multicast"),
        ("240.0.0.0/4", "reserved"),
    ]
]
_REFUSED_V6 = [
    (ipaddress.ip_network(net), why)
    for net, why in [
        ("::/128", "unspecified"),
        ("::1/128", "loopback"),
        ("64:ff9b:1::/48", "local-use NAT64"),
        ("100::/64", "discard-only"),
        ("2001::/23", "IETF protocol assignments (Teredo included)"),
        ("2001:db8::/32", "documentation"),
        ("3fff::/20", "documentation"),
        ("fc00::/7", "unique local (ULA)"),
        ("fe80::/10", "link-local"),
        ("fec0::/10", "site-local"),
        ("ff00::/8", "multicast"),
    ]
]
_LOW32 = 0xFFFFFFFF
# Prefixes whose last 32 bits are an IPv4 address: compatible (::/96, RFC 4291 §2.5.5.1), mapped
# (::ffff:0:0/96), SIIT-translated (::ffff:0:0:0/96, RFC 2765), NAT64 well-known (64:ff9b::/96,
# RFC 6052).
_LOW32_EMBEDDING = [
    ipaddress.ip_network(net)
    for net in ("::/96", "::ffff:0:0/96", "::ffff:0:0:0/96", "64:ff9b::/96")
]
_NAT64_LOCAL = ipaddress.ip_network("64:ff9b:1::/48")
_LEGACY_IPV4 = re.compile(r"^[0-9a-fA-FxX.]+$")


class EgressRefused(Exception):
    """The URL may not be reached: its host resolves to an address the policy refuses (or to
    none). Not an httpx error: a refusal is final, never retried."""


@dataclass(frozen=True)
class Exemptions:
    """What a caller's settings allow beyond public addresses."""

    #: loopback addresses (127.0.0.0/8, ::1) may be reached: tests, `make run`'s receivers.
    loopback: bool = False
    #: origins the operator listed ("scheme://host[:port]"; no port = every port of the host),
    #: which may resolve to any address.
    origins: tuple[str, ...] = ()

    def lists(self, scheme: str, host: str, port: int) -> bool:
        for entry in self.origins:
            parts = urllib.parse.urlsplit(entry.strip())
            if (parts.scheme, (parts.hostname or "").lower()) != (scheme, host):
                continue
            if parts.port is None or parts.port == port:
                return True
        return False


@dataclass(frozen=True)
class Destination:
    """A checked URL: where to connect (`address`) and the name to present (`host`)."""

    scheme: str
    host: str
    port: int
    address: str


def embedded_ipv4(address: ipaddress.IPv6Address) -> list[ipaddress.IPv4Address]:
    """The IPv4 addresses an IPv6 address carries (RFC 4291, 2765, 6052, 3056, 4380)."""
    found = []
    if any(address in net for net in _LOW32_EMBEDDING) and int(address) > 1:
        found.append(ipaddress.IPv4Address(int(address) & _LOW32))
    if address in _NAT64_LOCAL:
        # RFC 6052 §2.2 with a /48 prefix: bits 48–63 and 72–87 (bits 64–71 are the u octet).
        value = int(address)
        found.append(ipaddress.IPv4Address(((value >> 64) & 0xFFFF) << 16 | (value >> 40) & 0xFFFF))
        found.append(ipaddress.IPv4Address(int(address) & _LOW32))
    if address.sixtofour is not None:
        found.append(address.sixtofour)
    if address.teredo is not None:
        found.extend(address.teredo)  # (server, client), the client's already de-obfuscated
    return found


def refusal(address: Address, exemptions: Exemptions = Exemptions()) -> str | None:
    """Why `address` may not be reached, or None when it may."""
    if exemptions.loopback and address.is_loopback:
        return None
    if isinstance(address, ipaddress.IPv6Address):
        if address.scope_id:
            return f"{address} carries a zone (link-local)"
        for inner in embedded_ipv4(address):
            why = refusal(inner)
            if why:
                return f"{address} embeds {why}"
        table: list[Any] = _REFUSED_V6
    else:
        table = _REFUSED_V4
    for net, why in table:
        if address in net:
            return f"{address} is {why} ({net})"
    if not address.is_global:
        return f"{address} is not a global address"
    return None


def _literal(host: str) -> Address | None:
    """`host` as an IP address when it is one, in any form a resolver would take: also the
    decimal, octal, hex and short IPv4 forms inet_aton accepts (http://2852039166/,
    http://0251.0376.0251.0376/, http://0xa9fea9fe/, http://127.1/)."""
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        pass
    if _LEGACY_IPV4.match(host):
        try:
            return ipaddress.IPv4Address(socket.inet_aton(host))
        except OSError:
            return None
    return None


def system_resolver(host: str, port: int) -> list[str]:
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return [str(info[4][0]) for info in infos]


class EgressPolicy:
    """Resolve once, check every address, connect to the checked one."""

    def __init__(self, resolver: Resolver = system_resolver) -> None:
        self.resolver = resolver

    def check(self, url: str, exemptions: Exemptions = Exemptions()) -> Destination:
        """The checked destination of `url`; raises EgressRefused."""
        try:
            parts = urllib.parse.urlsplit(url)
            scheme = parts.scheme.lower()
            port = parts.port or _DEFAULT_PORTS.get(scheme, 0)
        except ValueError as error:
            raise EgressRefused(f"not a URL: {error}") from error
        host = (parts.hostname or "").lower().rstrip(".")
        if scheme not in _DEFAULT_PORTS or not host or not port:
            raise EgressRefused("only http(s) and ldap(s) URLs with a host are sent to")
        literal = _literal(host)
        if literal is not None:
            addresses = [literal]
        else:
            try:
                addresses = [ipaddress.ip_address(a) for a in self.resolver(host, port)]
            except (OSError, UnicodeError, ValueError) as error:
                raise EgressRefused(f"{host} does not resolve: {error}") from error
            if not addresses:
                raise EgressRefused(f"{host} does not resolve")
        if not exemptions.lists(scheme, host, port):
            for address in addresses:
                why = refusal(address, exemptions)
                if why:
                    raise EgressRefused(f"{host} is refused: {why}")
        return Destination(scheme=scheme, host=host, port=port, address=str(addresses[0]))

    def transport(self, exemptions: Exemptions = Exemptions(), **options: Any) -> PinnedTransport:
        return PinnedTransport(self, exemptions, httpx.HTTPTransport(**options))

    def client(
        self, exemptions: Exemptions = Exemptions(), *, verify: Any = True, **options: Any
    ) -> httpx.Client:
        """An httpx client whose every request is checked and pinned; it follows no redirect.
        (`verify` goes to the transport: httpx ignores a client's own when given a transport.)"""
        return httpx.Client(
            transport=self.transport(exemptions, verify=verify),
            **{**options, "follow_redirects": False},
        )


class PinnedTransport(httpx.BaseTransport):
    """Checks each request's URL with the policy and connects to the checked address: the URL's
    host becomes that address, SNI and the certificate check keep the name (httpcore's
    `sni_hostname`), and so does the Host header httpx set when the request was built."""

    def __init__(
        self, policy: EgressPolicy, exemptions: Exemptions, inner: httpx.BaseTransport
    ) -> None:
        self.policy = policy
        self.exemptions = exemptions
        self._inner = inner

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        destination = self.policy.check(str(request.url), self.exemptions)
        if destination.address != request.url.host:
            request.url = request.url.copy_with(host=destination.address)
            if destination.scheme == "https":
                request.extensions = {**request.extensions, "sni_hostname": destination.host}
        return self._inner.handle_request(request)

    def close(self) -> None:
        self._inner.close()


def origins_of(urls: Iterable[str]) -> tuple[str, ...]:
    """The "scheme://host:port" origins of `urls` (blank ones left out)."""
    found = []
    for url in urls:
        parts = urllib.parse.urlsplit((url or "").strip())
        if parts.scheme and parts.hostname:
            found.append(f"{parts.scheme}://{parts.netloc.rpartition('@')[2]}")
    return tuple(found)


#: The policy every outbound call uses.
POLICY = EgressPolicy()
