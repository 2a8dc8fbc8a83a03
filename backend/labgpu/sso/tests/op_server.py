"""Start the real OpenID Provider (op/op.mjs: panva's oidc-provider under Node) on loopback, and
walk its sign-in and consent pages the way a browser would."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import secrets
import shutil
import socket
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlencode, urljoin

import pytest
import requests

OP_DIR = Path(__file__).resolve().parent / "op"
RP_ORIGIN = "http://testserver"  # Django's test client
CLIENT_ID, CLIENT_SECRET = "labgpu", "labgpu-test-secret"
OTHER_CLIENT_ID, OTHER_CLIENT_SECRET = "other-app", "other-app-secret"


def _client(client_id: str, secret: str, origins: list[str]) -> dict:
    return {
        "client_id": client_id,
        "client_secret": secret,
        "token_endpoint_auth_method": "client_secret_post",
        "redirect_uris": [f"{origin}/oidc/callback/" for origin in origins],
        "post_logout_redirect_uris": [f"{origin}/login" for origin in origins],
    }


ACCOUNTS = {
    "dana": {
        "preferred_username": "dana",
        "email": "dana@uni.example",
        "email_verified": True,
        "given_name": "Dana",
        "family_name": "Scully",
        "zoneinfo": "Asia/Shanghai",
        "locale": "zh-CN",
        "groups": ["vision-members", "it-staff"],
    },
    "erin": {
        "preferred_username": "erin",
        "email": "erin@uni.example",
        "zoneinfo": "Not/A_Zone",
        "locale": "fr-FR",
        "groups": [],
    },
    # Hostile identities (issue 22), each a stranger to the local accounts they imitate.
    "stranger-carol": {  # the local site admin carol's username and address, unverified
        "preferred_username": "carol",
        "email": "carol@labgpu.example",
        "email_verified": False,
        "groups": "it-staff",  # a plain string, not a list
    },
    "verified-carol": {  # carol's address, verified, in an adoptable domain: still no site admin
        "preferred_username": "carol.v",
        "email": "carol@labgpu.example",
        "email_verified": True,
        "groups": ["IT-STAFF"],  # another case of the mapped value
    },
    "verified-alice": {  # alice's address, verified by the provider
        "preferred_username": "alice.uni",
        "email": "alice@labgpu.example",
        "email_verified": True,
    },
    "unverified-alice": {
        "preferred_username": "Alice",
        "email": "alice@labgpu.example",
        "email_verified": "true",  # a string: not JSON true
    },
    "cyrillic-carol": {"preferred_username": "\u0441arol", "email_verified": False},
    "confusable-carol": {"preferred_username": "caro1", "email_verified": False},
    "markup": {"preferred_username": '<b>x</b>\n=HYPERLINK("http://evil")'},
    "nul": {
        "preferred_username": "nu\u0000l",
        "given_name": "Eve\u0000",
        "email": "nul\u0000@uni.example",
        "email_verified": True,
        "groups": ["vision-members\u0000", "vision-members"],
    },
}


@dataclass
class OpenIdProvider:
    issuer: str
    process: subprocess.Popen

    def authorization_url(self, *, client_id: str, nonce: str, challenge: str) -> str:
        query = {
            "response_type": "code",
            "client_id": client_id,
            "redirect_uri": f"{RP_ORIGIN}/oidc/callback/",
            "scope": "openid email profile groups",
            "state": secrets.token_urlsafe(16),
            "nonce": nonce,
            "code_challenge": challenge,
            "code_challenge_method": "S256",
        }
        return f"{self.issuer}/auth?{urlencode(query)}"

    def token_response(self, *, client_id: str, secret: str, nonce: str, login: str) -> dict:
        """A real token response from the OP for `client_id`, outside LabGPU: for handing LabGPU
        genuine tokens that must still be refused (another audience, another nonce)."""
        verifier = secrets.token_urlsafe(48)
        challenge = (
            base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest())
            .rstrip(b"=")
            .decode()
        )
        callback = walk_sign_in(
            self.authorization_url(client_id=client_id, nonce=nonce, challenge=challenge), login
        )
        code = re.search(r"[?&]code=([^&]+)", callback).group(1)
        response = requests.post(
            f"{self.issuer}/token",
            data={
                "grant_type": "authorization_code",
                "code": code,
                "redirect_uri": f"{RP_ORIGIN}/oidc/callback/",
                "client_id": client_id,
                "client_secret": secret,
                "code_verifier": verifier,
            },
            timeout=10,
        )
        assert response.status_code == 200, response.text
        return response.json()


def walk_sign_in(authorization_url: str, login: str) -> str:
    """Follow the OP from its authorization endpoint through sign-in (any password) and consent;
    returns the URL it sends the browser back to (LabGPU's callback, with code or error)."""
    browser = requests.Session()
    response = browser.get(authorization_url, allow_redirects=False, timeout=10)
    for _ in range(12):
        if response.is_redirect:
            location = urljoin(response.url, response.headers["Location"])
            if location.startswith(RP_ORIGIN):
                return location
            response = browser.get(location, allow_redirects=False, timeout=10)
        elif response.status_code == 200 and 'name="prompt"' in response.text:
            action = re.search(r'<form[^>]* action="([^"]+)"', response.text).group(1)
            prompt = re.search(r'name="prompt" value="(\w+)"', response.text).group(1)
            form = {"prompt": prompt}
            if prompt == "login":
                form |= {"login": login, "password": "whatever the OP accepts"}
            response = browser.post(
                urljoin(response.url, action), data=form, allow_redirects=False, timeout=10
            )
        else:
            raise AssertionError(f"OP answered {response.status_code}: {response.text[:400]}")
    raise AssertionError("the OP never sent the browser back")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def ensure_op_installed() -> str:
    """The Node binary, after `npm ci` in op/ when its node_modules are missing (a fresh clone)."""
    node = shutil.which("node")
    if node is None:
        pytest.skip("Node.js is not installed: the OIDC tests run a real OpenID Provider on it")
    if not (OP_DIR / "node_modules" / "oidc-provider").is_dir():
        npm = shutil.which("npm")
        if npm is None:
            pytest.skip("npm is not installed: it installs the test OpenID Provider")
        subprocess.run(
            [npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=OP_DIR, check=True
        )
    return node


def op_config(rp_origins: list[str], **hostile: object) -> dict:
    """`hostile`: op.mjs's switches, e.g. omitKid=True, signingKeys=2."""
    return {
        "clients": [
            _client(CLIENT_ID, CLIENT_SECRET, rp_origins),
            _client(OTHER_CLIENT_ID, OTHER_CLIENT_SECRET, rp_origins),
        ],
        "accounts": ACCOUNTS,
        **hostile,
    }


def start_op(*, rp_origins: list[str], **hostile: object) -> Iterator[OpenIdProvider]:
    node = ensure_op_installed()
    port = free_port()
    config = op_config(rp_origins, **hostile)
    process = subprocess.Popen(
        [node, str(OP_DIR / "op.mjs")],
        cwd=OP_DIR,
        env={**os.environ, "OP_PORT": str(port), "OP_CONFIG": json.dumps(config)},
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        line = process.stdout.readline()  # blocks until the OP listens, or exits
        assert line.startswith("OP ready "), f"the OP did not start: {line!r}"
        yield OpenIdProvider(issuer=line.split()[-1], process=process)
    finally:
        process.terminate()
        process.wait(timeout=10)


if __name__ == "__main__":
    # For the browser suite (frontend/scripts/run-e2e.sh): serve the OP for a LabGPU at the given
    # origin until killed; prints "OP ready <issuer>" once it listens.
    import signal
    import sys

    provider = start_op(rp_origins=[sys.argv[1]])
    op = next(provider)
    print(f"OP ready {op.issuer}", flush=True)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        op.process.wait()
    finally:
        provider.close()
