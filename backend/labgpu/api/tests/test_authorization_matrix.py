"""Every operation in backend/openapi.yaml × every persona → the expected status class.

Personas: alice (researcher, vision lab), mallory (researcher, another lab), bob (vision lab
admin), carol (site admin), anon (no credentials), node (the heartbeat token of alice's node).
The URL list is read from the schema, so an endpoint without a row in MATRIX fails the test.

Classes: "ok" = the request got past authorisation (2xx, or 400/409/422 on the deliberately
empty or conflicting body); "deny" = 403 or 404 (objects outside a persona's visibility are 404,
I-6); "auth" = 401 or 403 (no acceptable credentials). Each persona's request runs in a savepoint
that is rolled back, so a delete by one persona cannot change what the next one sees.
"""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal
from pathlib import Path

import pytest
import yaml
from django.db import transaction
from rest_framework.test import APIClient

from conftest import client_for
from labgpu.accounts.models import Membership, SshKey
from labgpu.accounts.services import token_create
from labgpu.audit.models import AuditEvent
from labgpu.bookings.models import BookingSeries, Notification
from labgpu.bookings.tests.factories import BookingFactory
from labgpu.budgets.services import budget_create, cost_centre_create
from labgpu.catalog.models import Blackout, ProviderAccount
from labgpu.chat.services import channel_create
from labgpu.invitations.services import invitation_create
from labgpu.provisioning.models import Node, Volume
from labgpu.provisioning.tests.factories import NodeFactory
from labgpu.provisioning.tokens import hash_secret, new_heartbeat_token
from labgpu.quotas.models import Quota, QuotaRequest
from labgpu.sso.models import GroupMapping
from labgpu.waitlist.models import WaitlistEntry

SCHEMA = Path(__file__).resolve().parents[3] / "openapi.yaml"
PERSONAS = ("alice", "mallory", "bob", "carol", "anon", "node")
CLASSES = {
    "ok": lambda s: 200 <= s < 300 or s in (400, 409, 422),
    "deny": lambda s: s in (403, 404),
    "auth": lambda s: s in (401, 403),
}

SITE_ADMIN_ONLY_ROW = ("deny", "deny", "deny", "ok", "auth", "auth")
MATRIX: dict[str, tuple[str, ...]] = {
    # operation: (alice, mallory, bob, carol, anon, node)
    "DELETE /api/v1/blackouts/{id}/": ("deny", "deny", "deny", "ok", "auth", "auth"),
    "DELETE /api/v1/feeds/{id}/": ("deny", "deny", "deny", "deny", "auth", "auth"),
    "DELETE /api/v1/instance-types/{id}/": ("deny", "deny", "deny", "ok", "auth", "auth"),
    "DELETE /api/v1/labs/{lab_pk}/members/{id}/": ("deny", "deny", "ok", "ok", "auth", "auth"),
    "DELETE /api/v1/me/ssh-keys/{id}/": ("ok", "deny", "deny", "deny", "auth", "auth"),
    "DELETE /api/v1/pools/{id}/": ("deny", "deny", "deny", "ok", "auth", "auth"),
    "DELETE /api/v1/provider-accounts/{id}/": ("deny", "deny", "deny", "ok", "auth", "auth"),
    "DELETE /api/v1/tokens/{id}/": ("ok", "deny", "deny", "deny", "auth", "auth"),
    "GET /api/v1/availability/placement/": ("ok", "ok", "ok", "ok", "auth", "auth"),
    "GET /api/v1/audit/": ("ok", "ok", "ok", "ok", "auth", "auth"),
    "GET /api/v1/audit/{id}/": ("deny", "deny", "ok", "ok", "auth", "auth"),
    "GET /api/v1/auth/csrf/": ("ok", "ok", "ok", "ok", "ok", "ok"),
    "GET /api/v1/auth/providers/": ("ok", "ok", "ok", "ok", "ok", "ok"),
    "GET /api/v1/blackouts/": ("ok", "ok", "ok", "ok", "auth", "auth"),
    "GET /api/v1/blackouts/{id}/": ("ok", "ok", "ok", "ok", "auth", "auth"),
    "GET /api/v1/blackouts/{id}/clashes/": ("deny", "deny", "deny", "ok", "auth", "auth"),
    "GET /api/v1/bookings/": ("ok", "ok", "ok", "ok", "auth", "auth"),
    # Lists only what the caller decides: empty for researchers.
    "GET /api/v1/bookings/approval-queue/": ("ok", "ok", "ok", "ok", "auth", "auth"),
    "GET /api/v1/bookings/compact/": ("ok", "ok", "ok", "ok", "auth", "auth"),
    "GET /api/v1/bookings/{id}/": ("ok", "deny", "ok", "ok", "auth", "auth"),
    "GET /api/v1/feeds/": ("ok", "ok", "ok", "ok", "auth", "auth"),
    "GET /api/v1/feeds/{token}.ics": ("deny", "deny", "deny", "deny", "deny", "deny"),
    "GET /api/v1/instance-types/": ("ok", "ok", "ok", "ok", "auth", "auth"),
    "GET /api/v1/instance-types/{id}/": ("ok", "ok", "ok", "ok", "auth", "auth"),
    "GET /api/v1/instance-types/{id}/health/": ("ok", "ok", "ok", "ok", "auth", "auth"),
    "GET /api/v1/labs/": ("ok", "ok", "ok", "ok", "auth", "auth"),
    "GET /api/v1/labs/{id}/": ("ok", "deny", "ok", "ok", "auth", "auth"),
    # Site admins create, rename and archive labs; a lab admin may not rename their own.
    "POST /api/v1/labs/": ("deny", "deny", "deny", "ok", "auth", "auth"),
    "PATCH /api/v1/labs/{id}/": ("deny", "deny", "deny", "ok", "auth", "auth"),
    # Prices (labgpu.pricing): everyone signed in reads them; site admins sync and adjust.
    "GET /api/v1/prices/": ("ok", "ok", "ok", "ok", "auth", "auth"),
    "POST /api/v1/prices/sync/": SITE_ADMIN_ONLY_ROW,
    "GET /api/v1/prices/display-currency/": ("ok", "ok", "ok", "ok", "auth", "auth"),
    "PUT /api/v1/prices/display-currency/": SITE_ADMIN_ONLY_ROW,
    "GET /api/v1/instance-types/{id}/prices/": ("ok", "ok", "ok", "ok", "auth", "auth"),
    "POST /api/v1/instance-types/{id}/price-adjustment/": SITE_ADMIN_ONLY_ROW,
    # A lab's monthly statement: its lab admins and site admins (a member is refused, 403).
    "GET /api/v1/labs/{lab_pk}/statement/": ("deny", "deny", "ok", "ok", "auth", "auth"),
    "GET /api/v1/labs/{lab_pk}/statement/pdf/": ("deny", "deny", "ok", "ok", "auth", "auth"),
    "GET /api/v1/labs/{lab_pk}/statement/html/": ("deny", "deny", "ok", "ok", "auth", "auth"),
    "GET /api/v1/labs/{lab_pk}/members/": ("ok", "deny", "ok", "ok", "auth", "auth"),
    "GET /api/v1/labs/{lab_pk}/members/{id}/": ("ok", "deny", "ok", "ok", "auth", "auth"),
    "GET /api/v1/me/": ("ok", "ok", "ok", "ok", "auth", "auth"),
    # Everyone has their own notifications; one of alice's is hers alone to mark read.
    "GET /api/v1/notifications/": ("ok", "ok", "ok", "ok", "auth", "auth"),
    "POST /api/v1/notifications/{id}/read/": ("ok", "deny", "deny", "deny", "auth", "auth"),
    "POST /api/v1/notifications/read-all/": ("ok", "ok", "ok", "ok", "auth", "auth"),
    # Chat channels: everyone lists their own; a lab's channel is for its admins (and site admins).
    "GET /api/v1/chat-channels/": ("ok", "ok", "ok", "ok", "auth", "auth"),
    "POST /api/v1/chat-channels/": ("ok", "ok", "ok", "ok", "auth", "auth"),
    "GET /api/v1/chat-channels/{id}/": ("deny", "deny", "ok", "ok", "auth", "auth"),
    "PATCH /api/v1/chat-channels/{id}/": ("deny", "deny", "ok", "ok", "auth", "auth"),
    "DELETE /api/v1/chat-channels/{id}/": ("deny", "deny", "ok", "ok", "auth", "auth"),
    "POST /api/v1/chat-channels/{id}/test/": ("deny", "deny", "ok", "ok", "auth", "auth"),
    "GET /api/v1/chat-channels/{id}/deliveries/": ("deny", "deny", "ok", "ok", "auth", "auth"),
    # Persistent volumes: alice's own; site admins see (and may delete) every volume.
    "GET /api/v1/volumes/": ("ok", "ok", "ok", "ok", "auth", "auth"),
    "DELETE /api/v1/volumes/{id}/": ("ok", "deny", "deny", "ok", "auth", "auth"),
    # Anyone in a lab may create a volume (in a pool they may book: the body names it); a
    # volume grows by its owner, the owning lab's admins or a site admin.
    "POST /api/v1/volumes/": ("ok", "ok", "ok", "ok", "auth", "auth"),
    "POST /api/v1/volumes/{id}/resize/": ("ok", "deny", "deny", "ok", "auth", "auth"),
    # The size of a lab's new volumes is its admins' setting (within the site's limit); what
    # reconcile found untracked is for site admins.
    "GET /api/v1/volumes/lab-size/{lab_id}/": ("deny", "deny", "ok", "ok", "auth", "auth"),
    "PUT /api/v1/volumes/lab-size/{lab_id}/": ("deny", "deny", "ok", "ok", "auth", "auth"),
    "GET /api/v1/volumes/untracked/": SITE_ADMIN_ONLY_ROW,
    "GET /api/v1/usage/storage/": ("ok", "ok", "ok", "ok", "auth", "auth"),
    # Live utilisation of alice's booking: whoever may read the booking; keep (answering an
    # idle warning) is for whoever may change it, as cancel and extend are.
    "GET /api/v1/bookings/{id}/utilisation/": ("ok", "deny", "ok", "ok", "auth", "auth"),
    "POST /api/v1/bookings/{id}/keep/": ("ok", "deny", "ok", "ok", "auth", "auth"),
    "GET /api/v1/pools/{id}/free-windows/": ("ok", "ok", "ok", "ok", "auth", "auth"),
    "GET /api/v1/me/ssh-keys/": ("ok", "ok", "ok", "ok", "auth", "auth"),
    "GET /api/v1/nodes/": ("deny", "deny", "deny", "ok", "auth", "auth"),
    "GET /api/v1/nodes/{id}/": ("deny", "deny", "deny", "ok", "auth", "auth"),
    "GET /api/v1/nodes/{id}/health/": ("ok", "deny", "ok", "ok", "auth", "auth"),
    "GET /api/v1/pools/": ("ok", "ok", "ok", "ok", "auth", "auth"),
    # How long each pool's nodes take to come up: the pools the caller may book.
    "GET /api/v1/pool-ready-times/": ("ok", "ok", "ok", "ok", "auth", "auth"),
    "GET /api/v1/pools/{id}/": ("ok", "ok", "ok", "ok", "auth", "auth"),
    "GET /api/v1/pools/{id}/availability/": ("ok", "ok", "ok", "ok", "auth", "auth"),
    "GET /api/v1/pools/{id}/busy/": ("ok", "ok", "ok", "ok", "auth", "auth"),
    "GET /api/v1/provider-accounts/": ("deny", "deny", "deny", "ok", "auth", "auth"),
    "GET /api/v1/provider-accounts/{id}/": ("deny", "deny", "deny", "ok", "auth", "auth"),
    "GET /api/v1/quota-requests/": ("ok", "ok", "ok", "ok", "auth", "auth"),
    "GET /api/v1/quota-requests/{id}/": ("ok", "deny", "ok", "ok", "auth", "auth"),
    "GET /api/v1/quotas/": ("ok", "ok", "ok", "ok", "auth", "auth"),
    "GET /api/v1/quotas/{id}/": ("ok", "deny", "ok", "ok", "auth", "auth"),
    "GET /api/v1/tokens/": ("ok", "ok", "ok", "ok", "auth", "auth"),
    "GET /api/v1/usage/": ("ok", "ok", "ok", "ok", "auth", "auth"),
    "PATCH /api/v1/blackouts/{id}/": ("deny", "deny", "deny", "ok", "auth", "auth"),
    "PATCH /api/v1/instance-types/{id}/": ("deny", "deny", "deny", "ok", "auth", "auth"),
    "PATCH /api/v1/labs/{lab_pk}/members/{id}/": ("deny", "deny", "ok", "ok", "auth", "auth"),
    "PATCH /api/v1/me/": ("ok", "ok", "ok", "ok", "auth", "auth"),
    "PATCH /api/v1/pools/{id}/": ("deny", "deny", "deny", "ok", "auth", "auth"),
    "PATCH /api/v1/provider-accounts/{id}/": ("deny", "deny", "deny", "ok", "auth", "auth"),
    "POST /api/v1/agent/bootstrap/": ("deny", "deny", "deny", "deny", "auth", "auth"),
    "POST /api/v1/agent/heartbeat/": ("deny", "deny", "deny", "deny", "auth", "ok"),
    "POST /api/v1/agent/notebook/": ("deny", "deny", "deny", "deny", "auth", "ok"),
    "POST /api/v1/agent/reports/": ("deny", "deny", "deny", "deny", "auth", "ok"),
    "POST /api/v1/auth/login/": ("ok", "ok", "ok", "ok", "ok", "ok"),
    "POST /api/v1/auth/logout/": ("ok", "ok", "ok", "ok", "auth", "auth"),
    "POST /api/v1/blackouts/": ("deny", "deny", "deny", "ok", "auth", "auth"),
    "POST /api/v1/bookings/": ("ok", "ok", "ok", "ok", "auth", "auth"),
    "POST /api/v1/bookings/decide/": ("ok", "ok", "ok", "ok", "auth", "auth"),
    "POST /api/v1/bookings/place/": ("ok", "ok", "ok", "ok", "auth", "auth"),
    "POST /api/v1/bookings/{id}/approve/": ("deny", "deny", "ok", "ok", "auth", "auth"),
    "POST /api/v1/bookings/{id}/cancel/": ("ok", "deny", "ok", "ok", "auth", "auth"),
    # The notebook's token is the owner's alone: the lab admin and the site admin see the
    # booking but are refused its notebook (403 not_booking_owner).
    "GET /api/v1/bookings/{id}/notebook/": ("ok", "deny", "deny", "deny", "auth", "auth"),
    "POST /api/v1/bookings/{id}/extend/": ("ok", "deny", "ok", "ok", "auth", "auth"),
    "POST /api/v1/bookings/{id}/move/": ("ok", "deny", "ok", "ok", "auth", "auth"),
    "POST /api/v1/bookings/{id}/reject/": ("ok", "deny", "ok", "ok", "auth", "auth"),
    "POST /api/v1/feeds/": ("ok", "ok", "ok", "ok", "auth", "auth"),
    "POST /api/v1/nodes/{id}/deep-check/": ("deny", "deny", "deny", "ok", "auth", "auth"),
    "POST /api/v1/nodes/{id}/destroy/": ("deny", "deny", "deny", "ok", "auth", "auth"),
    "POST /api/v1/nodes/{id}/retry/": ("deny", "deny", "deny", "ok", "auth", "auth"),
    "POST /api/v1/instance-types/": ("deny", "deny", "deny", "ok", "auth", "auth"),
    "POST /api/v1/labs/{lab_pk}/members/": ("deny", "deny", "deny", "ok", "auth", "auth"),
    "POST /api/v1/me/ssh-keys/": ("ok", "ok", "ok", "ok", "auth", "auth"),
    "POST /api/v1/pools/": ("deny", "deny", "deny", "ok", "auth", "auth"),
    "POST /api/v1/provider-accounts/": ("deny", "deny", "deny", "ok", "auth", "auth"),
    "POST /api/v1/quota-requests/": ("ok", "ok", "ok", "ok", "auth", "auth"),
    "POST /api/v1/quota-requests/{id}/approve/": ("deny", "deny", "deny", "ok", "auth", "auth"),
    "POST /api/v1/quota-requests/{id}/reject/": ("ok", "deny", "ok", "ok", "auth", "auth"),
    "POST /api/v1/quotas/": ("ok", "ok", "ok", "ok", "auth", "auth"),
    "POST /api/v1/tokens/": ("ok", "ok", "ok", "ok", "auth", "auth"),
    "PUT /api/v1/blackouts/{id}/": ("deny", "deny", "deny", "ok", "auth", "auth"),
    "PUT /api/v1/instance-types/{id}/": ("deny", "deny", "deny", "ok", "auth", "auth"),
    "PUT /api/v1/pools/{id}/": ("deny", "deny", "deny", "ok", "auth", "auth"),
    "PUT /api/v1/provider-accounts/{id}/": ("deny", "deny", "deny", "ok", "auth", "auth"),
    # Budgets and cost centres (labgpu.budgets): members read their labs' (the dashboard's bar,
    # the booking form's cost centre); lab admins and site admins change them. An empty POST is
    # refused for its body (400) before anyone's rights are weighed.
    "GET /api/v1/budgets/": ("ok", "ok", "ok", "ok", "auth", "auth"),
    "POST /api/v1/budgets/": ("ok", "ok", "ok", "ok", "auth", "auth"),
    "GET /api/v1/budgets/{id}/": ("ok", "deny", "ok", "ok", "auth", "auth"),
    "PATCH /api/v1/budgets/{id}/": ("deny", "deny", "ok", "ok", "auth", "auth"),
    "DELETE /api/v1/budgets/{id}/": ("deny", "deny", "ok", "ok", "auth", "auth"),
    "GET /api/v1/cost-centres/": ("ok", "ok", "ok", "ok", "auth", "auth"),
    "POST /api/v1/cost-centres/": ("ok", "ok", "ok", "ok", "auth", "auth"),
    "GET /api/v1/cost-centres/{id}/": ("ok", "deny", "ok", "ok", "auth", "auth"),
    "PATCH /api/v1/cost-centres/{id}/": ("deny", "deny", "ok", "ok", "auth", "auth"),
    "POST /api/v1/cost-centre-defaults/": ("ok", "ok", "ok", "ok", "auth", "auth"),
}

# Real bugs, reported to the domain owner; strict so the fix turns them green.
SITE_ADMIN_ONLY = ("deny", "deny", "deny", "ok", "auth", "auth")
MATRIX |= {
    "GET /api/v1/sso/group-mappings/": SITE_ADMIN_ONLY,
    "POST /api/v1/sso/group-mappings/": SITE_ADMIN_ONLY,
    "GET /api/v1/sso/group-mappings/{id}/": SITE_ADMIN_ONLY,
    "PATCH /api/v1/sso/group-mappings/{id}/": SITE_ADMIN_ONLY,
    "DELETE /api/v1/sso/group-mappings/{id}/": SITE_ADMIN_ONLY,
    "GET /api/v1/sso/identity-links/": SITE_ADMIN_ONLY,
    "POST /api/v1/sso/identity-links/confirm/": SITE_ADMIN_ONLY,
    "POST /api/v1/sso/identity-links/cut/": SITE_ADMIN_ONLY,
}
LAB_ADMINS = ("deny", "deny", "ok", "ok", "auth", "auth")
ANYONE = ("ok", "ok", "ok", "ok", "ok", "ok")
MATRIX |= {
    "GET /api/v1/labs/{lab_pk}/invitations/": LAB_ADMINS,
    "POST /api/v1/labs/{lab_pk}/invitations/": LAB_ADMINS,
    "DELETE /api/v1/labs/{lab_pk}/invitations/{id}/": LAB_ADMINS,
    # The link's secret is the credential: previewing and signing up need no account.
    "POST /api/v1/invitations/preview/": ANYONE,
    "POST /api/v1/invitations/sign-up/": ANYONE,
    # Accepting joins the signed-in person (a session, not a token or a node).
    "POST /api/v1/invitations/accept/": ("ok", "ok", "ok", "ok", "auth", "auth"),
    # Mailing a verification link to an address is one's own business; opening it needs only
    # the link's secret (issue 22 item 4).
    "POST /api/v1/me/email/": ("ok", "ok", "ok", "ok", "auth", "auth"),
    "GET /api/v1/me/identities/": ("ok", "ok", "ok", "ok", "auth", "auth"),
    "POST /api/v1/me/identities/ldap/": ("ok", "ok", "ok", "ok", "auth", "auth"),
    "POST /api/v1/email/verify/": ANYONE,
}

# Recurring series (issue 25): alice's series of her lab; its lab's admins decide it.
MATRIX |= {
    "GET /api/v1/series/": ("ok", "ok", "ok", "ok", "auth", "auth"),
    "POST /api/v1/series/": ("ok", "ok", "ok", "ok", "auth", "auth"),
    "GET /api/v1/series/{id}/": ("ok", "deny", "ok", "ok", "auth", "auth"),
    "POST /api/v1/series/{id}/cancel/": ("ok", "deny", "ok", "ok", "auth", "auth"),
    "POST /api/v1/series/{id}/move/": ("ok", "deny", "ok", "ok", "auth", "auth"),
    # alice may not approve her own series (403), a lab admin and site admins may.
    "POST /api/v1/series/{id}/approve/": ("deny", "deny", "ok", "ok", "auth", "auth"),
    "POST /api/v1/series/{id}/reject/": ("deny", "deny", "ok", "ok", "auth", "auth"),
}

# The waitlist (issue 25): alice's entry of her lab; its lab's admins see it, only she acts on it.
MATRIX |= {
    "GET /api/v1/waitlist/": ("ok", "ok", "ok", "ok", "auth", "auth"),
    "POST /api/v1/waitlist/": ("ok", "ok", "ok", "ok", "auth", "auth"),
    "GET /api/v1/waitlist/{id}/": ("ok", "deny", "ok", "ok", "auth", "auth"),
    "POST /api/v1/waitlist/{id}/accept/": ("ok", "deny", "deny", "deny", "auth", "auth"),
    "POST /api/v1/waitlist/{id}/decline/": ("ok", "deny", "deny", "deny", "auth", "auth"),
    "POST /api/v1/waitlist/{id}/leave/": ("ok", "deny", "deny", "deny", "auth", "auth"),
}

KNOWN_BUGS: dict[str, str] = {}  # operation → reason, for bugs tracked as strict xfails


def operations() -> list[str]:
    schema = yaml.safe_load(SCHEMA.read_text())
    methods = ("get", "post", "put", "patch", "delete")
    return sorted(
        f"{method.upper()} {path}"
        for path, item in schema["paths"].items()
        for method in methods
        if method in item
    )


@pytest.fixture(autouse=True)
def fast_passwords(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def world(alice, bob, carol, mallory, vision_lab, other_lab, pool, instance_type, quotas):
    start = pool.created_at.replace(microsecond=0) + timedelta(days=3)
    account = ProviderAccount.objects.create(
        name="Matrix",
        kind="emulator",
        api_base_url="http://127.0.0.1:9",
        token_env_var="LABGPU_PROVIDER_TOKEN_NOPE",
    )
    booking = BookingFactory(
        lab=vision_lab, user=alice, pool=pool, start=start, status="pending", jupyter=True
    )
    node = NodeFactory(booking=booking, provider_account=account, status="ready", provider_id="7")
    heartbeat = new_heartbeat_token()
    Node.objects.filter(pk=node.pk).update(heartbeat_token_hash=hash_secret(heartbeat))
    ssh_key = SshKey.objects.create(
        user=alice, name="laptop", public_key="ssh-ed25519 AAAA alice", fingerprint="SHA256:x"
    )
    token, _ = token_create(user=alice, name="script", scopes=["read"])
    blackout = Blackout.objects.create(
        pool=pool, start=start + timedelta(days=1), end=start + timedelta(days=2)
    )
    quota = Quota.objects.filter(lab=vision_lab).first()
    quota_request = QuotaRequest.objects.create(
        lab=vision_lab,
        instance_type=instance_type,
        month=quota.month,
        gpu_hours=Decimal(10),
        requested_by=bob,
    )
    audit = AuditEvent.objects.create(
        actor=bob,
        action="booking.approve",
        target_type="booking",
        target_id=str(booking.pk),
        lab=vision_lab,
    )
    series = BookingSeries.objects.create(
        lab=vision_lab,
        user=alice,
        pool=pool,
        frequency="weekly",
        timezone="Asia/Shanghai",
        first_start=start + timedelta(days=7),
        duration_minutes=60,
        count=1,
    )
    BookingFactory(
        lab=vision_lab,
        user=alice,
        pool=pool,
        start=start + timedelta(days=7),
        status="pending",
        series=series,
        slot=1,
    )
    ids = {
        "waitlist": WaitlistEntry.objects.create(
            user=alice,
            lab=vision_lab,
            pool=pool,
            earliest_start=start,
            latest_end=start + timedelta(hours=2),
            duration_minutes=60,
            status_changed_at=start,
        ).pk,
        "series": series.pk,
        "audit": audit.pk,
        "blackouts": blackout.pk,
        "bookings": booking.pk,
        "instance-types": instance_type.pk,
        "labs": vision_lab.pk,
        "ssh-keys": ssh_key.pk,
        "nodes": node.pk,
        "pools": pool.pk,
        "provider-accounts": account.pk,
        "quota-requests": quota_request.pk,
        "quotas": quota.pk,
        "tokens": token.pk,
        "members": Membership.objects.get(user=alice).pk,
        "group-mappings": GroupMapping.objects.create(group="g", lab=vision_lab).pk,
        "invitations": invitation_create(actor=bob, lab=vision_lab, email="new@example.org")[0].pk,
        "notifications": Notification.objects.create(user=alice, subject="Ready").pk,
        # A channel of alice's lab: its admins manage it, its members do not.
        "chat-channels": channel_create(
            actor=bob,
            kind="slack",
            name="Vision lab",
            url="https://hooks.slack.com/services/T0000/B0000/matrix",
            lab=vision_lab,
        ).pk,
        "budgets": budget_create(actor=bob, lab=vision_lab, amount=Decimal(100)).pk,
        "cost-centres": cost_centre_create(actor=bob, lab=vision_lab, code="NSF-1").pk,
        "volumes": Volume.objects.create(
            owner_user=alice,
            provider_account=account,
            region="nyc2",
            name="labgpu-matrix-alice",
            size_gb=100,
            state=Volume.State.AVAILABLE,
        ).pk,
    }
    node_client = APIClient()
    node_client.credentials(HTTP_AUTHORIZATION=f"Bearer {heartbeat}")
    clients = {
        "alice": client_for(alice),
        "mallory": client_for(mallory),
        "bob": client_for(bob),
        "carol": client_for(carol),
        "anon": APIClient(),
        "node": node_client,
    }
    return ids, clients, vision_lab


def concrete(path: str, ids: dict[str, int], lab_pk: int) -> str:
    parts = path.strip("/").split("/")
    out = []
    for index, part in enumerate(parts):
        if part in ("{lab_pk}", "{lab_id}"):
            out.append(str(lab_pk))
        elif part == "{id}":
            out.append(str(ids.get(parts[index - 1], 999999)))
        else:
            out.append(part)
    return "/" + "/".join(out) + "/"


def call(client: APIClient, method: str, url: str) -> int:
    with transaction.atomic():
        response = getattr(client, method.lower())(url, {}, format="json")
        transaction.set_rollback(True)
    return response.status_code


def test_every_operation_in_the_schema_has_a_row():
    missing = sorted(set(operations()) - set(MATRIX))
    stale = sorted(set(MATRIX) - set(operations()))
    assert not missing, f"add these to MATRIX: {missing}"
    assert not stale, f"no longer in the schema: {stale}"


def cases() -> list:
    return [
        pytest.param(op, marks=pytest.mark.xfail(strict=True, reason=KNOWN_BUGS[op]))
        if op in KNOWN_BUGS
        else op
        for op in operations()
    ]


@pytest.mark.django_db
@pytest.mark.parametrize("operation", cases())
def test_authorisation(operation, world, settings):
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "DEFAULT_THROTTLE_CLASSES": []}
    ids, clients, lab = world
    expected = MATRIX.get(operation)
    if expected is None:
        pytest.fail(f"{operation} has no row in MATRIX")
    method, path = operation.split(" ", 1)
    url = concrete(path, ids, lab.pk)
    got = {persona: call(clients[persona], method, url) for persona in PERSONAS}
    assert 500 not in got.values(), f"{operation}: {got}"
    wrong = {
        persona: f"{got[persona]} (expected {cls})"
        for persona, cls in zip(PERSONAS, expected, strict=True)
        if not CLASSES[cls](got[persona])
    }
    assert not wrong, f"{operation}: {wrong}"
