"""The egress policy (labgpu.egress.POLICY), the one every outbound call uses, against the URL
forms an attacker would try: internal addresses written every way a resolver or an IPv6 network
would take them, and DNS names a hostile DNS server points inside (`hostile_dns`)."""

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest

from labgpu import egress
from labgpu.egress import POLICY, EgressRefused, Exemptions

pytestmark = pytest.mark.security

PUBLIC_V4 = "93.184.215.14"
DNS = {
    "internal.example": ["10.1.2.3"],
    "metadata.example": ["169.254.169.254"],
    "mapped-metadata.example": ["::ffff:169.254.169.254"],
    "nat64-metadata.example": ["64:ff9b::a9fe:a9fe"],
    "ula.example": ["fd00::1"],
    "cgnat.example": ["100.100.100.200"],
    # One public and one internal answer: a client may pick either, so the name is refused.
    "rebind.example": [PUBLIC_V4, "127.0.0.1"],
    "public.example": [PUBLIC_V4],
    "public6.example": ["2606:4700::1111"],
}

REFUSED = [
    "http://127.0.0.1/",
    "http://127.1/",
    "http://2130706433/",
    "http://0x7f000001/",
    "http://0177.0.0.1/",
    "http://127.0.0.1./",
    "http://localhost:8000/",
    "http://169.254.169.254/latest/meta-data/",
    "http://2852039166/",
    "http://0xa9fea9fe/",
    "http://0251.0376.0251.0376/",
    "http://169.254.43518/",
    "http://10.0.0.1/",
    "http://172.16.5.4/",
    "http://192.168.1.1/",
    "http://100.64.0.1/",
    "http://0.0.0.0/",
    "http://224.0.0.1/",
    "http://255.255.255.255/",
    "http://240.0.0.1/",
    "http://192.0.0.170/",
    "http://198.18.0.1/",
    "http://[::1]/",
    "http://[::]/",
    "http://[::ffff:127.0.0.1]/",
    "http://[::ffff:a9fe:a9fe]/",
    "https://[::127.0.0.1]/",
    "https://[::169.254.169.254]/",
    "https://[64:ff9b::a9fe:a9fe]/",
    "https://[64:ff9b::10.0.0.1]/",
    "https://[::ffff:0:a9fe:a9fe]/",
    "https://[64:ff9b:1:a9fe:a9:fe00::]/",
    "https://[2002:a9fe:a9fe::1]/",
    "https://[2002:7f00:1::]/",
    "https://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/",
    "https://[fe80::1]/",
    "https://[fe80::1%25eth0]/",
    "https://[fc00::1]/",
    "https://[fd12:3456::1]/",
    "https://[ff02::1]/",
    "https://[fec0::1]/",
    "https://[2001:db8::1]/",
    "https://[100::1]/",
    "https://internal.example/hook",
    "https://metadata.example/",
    "https://mapped-metadata.example/",
    "https://nat64-metadata.example/",
    "https://ula.example/",
    "https://cgnat.example/",
    "https://rebind.example/",
    "https://nx.example/",
    "ftp://93.184.215.14/",
    "https:///no-host",
]
ALLOWED = [
    (f"https://{PUBLIC_V4}/", PUBLIC_V4),
    ("https://[2606:4700::1111]/", "2606:4700::1111"),
    ("https://public.example/hook", PUBLIC_V4),
    ("https://public6.example:8443/", "2606:4700::1111"),
    ("https://[64:ff9b::808:808]/", "64:ff9b::808:808"),  # NAT64 of a public address
]


@pytest.fixture(autouse=True)
def _dns(hostile_dns):
    hostile_dns.answers.update(DNS)
    return hostile_dns


def test_the_table_holds_at_least_forty_hostile_url_forms():
    assert len(set(REFUSED)) >= 40


@pytest.mark.parametrize("url", REFUSED)
def test_internal_addresses_in_every_form_are_refused(url):
    with pytest.raises(EgressRefused):
        POLICY.check(url)


@pytest.mark.parametrize(("url", "address"), ALLOWED)
def test_public_addresses_pass_and_are_the_ones_connected_to(url, address):
    assert POLICY.check(url).address == address


@pytest.mark.parametrize(
    "address",
    [
        "64:ff9b::a9fe:a9fe",
        "::a9fe:a9fe",
        "::ffff:0:a9fe:a9fe",
        "2002:a9fe:a9fe::",
        "::ffff:a9fe:a9fe",
        "64:ff9b:1:a9fe:a9:fe00::",
    ],
)
def test_the_ipv4_an_ipv6_address_embeds_is_extracted(address):
    import ipaddress

    assert ipaddress.IPv4Address("169.254.169.254") in egress.embedded_ipv4(
        ipaddress.IPv6Address(address)
    )


def test_the_loopback_opt_in_allows_loopback_and_nothing_else_inside():
    loopback = Exemptions(loopback=True)
    assert POLICY.check("http://127.0.0.1:9/", loopback).address == "127.0.0.1"
    assert POLICY.check("http://localhost:9/", loopback).address == "127.0.0.1"
    for url in ("http://10.0.0.1/", "http://169.254.169.254/", "https://[64:ff9b::a9fe:a9fe]/"):
        with pytest.raises(EgressRefused):
            POLICY.check(url, loopback)


def test_an_origin_the_operator_listed_may_be_internal_and_only_that_origin():
    listed = Exemptions(origins=("https://idp.internal.example", "ldap://10.0.0.7:389"))
    assert POLICY.check("ldap://10.0.0.7:389", listed).address == "10.0.0.7"
    with pytest.raises(EgressRefused):
        POLICY.check("ldap://10.0.0.8:389", listed)
    with pytest.raises(EgressRefused):
        POLICY.check("http://10.0.0.7:389/", listed)


class _Server:
    """A local HTTP server that records each request's Host header and answers `answer`."""

    def __init__(self, answer, tls=None):
        seen = self.seen = []

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                seen.append(self.headers["Host"])
                status, headers = answer
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        if tls is not None:
            self.server.socket = tls.wrap_socket(self.server.socket, server_side=True)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def test_the_name_is_resolved_once_and_the_checked_address_connected_with_its_host(hostile_dns):
    server = _Server((200, {}))
    hostile_dns.answers["pinned.example"] = ["127.0.0.1"]
    try:
        with POLICY.client(Exemptions(loopback=True)) as client:
            response = client.get(f"http://pinned.example:{server.port}/x")
    finally:
        server.close()
    assert response.status_code == 200
    # The system resolver knows no pinned.example: the connection went to the checked address.
    assert server.seen == [f"pinned.example:{server.port}"]
    assert hostile_dns.calls.count("pinned.example") == 1


def test_a_redirect_to_an_internal_host_is_never_followed(hostile_dns):
    server = _Server((302, {"Location": "http://169.254.169.254/latest/meta-data/"}))
    try:
        with POLICY.client(Exemptions(loopback=True)) as client:
            response = client.get(f"http://127.0.0.1:{server.port}/")
        assert response.status_code == 302  # handed back, not followed
        # Even a client told to follow passes each hop through the policy.
        transport = POLICY.transport(Exemptions(loopback=True))
        with (
            httpx.Client(transport=transport, follow_redirects=True) as client,
            pytest.raises(EgressRefused),
        ):
            client.get(f"http://127.0.0.1:{server.port}/")
    finally:
        server.close()
    assert len(server.seen) == 2


def _certificate_for(name: str, directory) -> tuple[str, str]:
    """A self-signed certificate for `name` (cert file, key file), as a TLS server would hold."""
    import datetime

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    moment = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(moment - datetime.timedelta(minutes=5))
        .not_valid_after(moment + datetime.timedelta(hours=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(name)]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_file, key_file = directory / "cert.pem", directory / "key.pem"
    cert_file.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return str(cert_file), str(key_file)


def test_over_tls_the_checked_address_is_connected_to_and_the_name_is_verified(
    hostile_dns, tmp_path
):
    import ssl

    cert_file, key_file = _certificate_for("pinned.example", tmp_path)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert_file, key_file)
    names_asked = []
    context.sni_callback = lambda sock, name, ctx: names_asked.append(name)
    server = _Server((200, {}), tls=context)
    hostile_dns.answers["pinned.example"] = ["127.0.0.1"]
    trusted = ssl.create_default_context(cafile=cert_file)
    try:
        with POLICY.client(Exemptions(loopback=True), verify=trusted) as client:
            response = client.get(f"https://pinned.example:{server.port}/")
        # The certificate names pinned.example, not 127.0.0.1: asked for by address, it fails.
        with (
            POLICY.client(Exemptions(loopback=True), verify=trusted) as client,
            pytest.raises(httpx.ConnectError, match=r"certificate|match"),
        ):
            client.get(f"https://127.0.0.1:{server.port}/")
    finally:
        server.close()
    assert response.status_code == 200
    assert names_asked[0] == "pinned.example"  # SNI carried the name
    assert server.seen == [f"pinned.example:{server.port}"]
