"""Site admins keep the catalog in the web app: every write is theirs alone, validated per field,
and audited; a new price applies to bookings made from then on."""

from datetime import timedelta
from decimal import Decimal

import pytest

from labgpu.audit.models import AuditEvent
from labgpu.bookings.models import Booking
from labgpu.catalog.models import InstanceType, NodePool

pytestmark = pytest.mark.django_db


def instance_type_body(provider_account_id: int, **extra):
    return {
        "name": "MI300X ×1 (new)",
        "slug": "mi300x-new",
        "provider_account": provider_account_id,
        "provider_size": "gpu-mi300x1-192gb",
        "gpu_vendor": "amd",
        "gpu_model": "MI300X",
        "gpu_count": 1,
        "vram_gb_per_gpu": 192,
        "gpu_arch": "gfx942",
        "price_per_hour": "1.99",
        **extra,
    }


@pytest.mark.parametrize("who", ["as_alice", "as_bob"])
def test_researchers_and_lab_admins_cannot_write_the_catalog(
    request, who, instance_type, pool, vision_lab
):
    client = request.getfixturevalue(who)
    account = instance_type.provider_account_id
    writes = [
        client.post("/api/v1/instance-types/", instance_type_body(account), format="json"),
        client.patch(
            f"/api/v1/instance-types/{instance_type.pk}/", {"price_per_hour": "0.01"}, format="json"
        ),
        client.post(
            "/api/v1/pools/",
            {
                "name": "x",
                "slug": "x",
                "instance_type": instance_type.pk,
                "region": "atl1",
                "capacity": 1,
            },
            format="json",
        ),
        client.patch(f"/api/v1/pools/{pool.pk}/", {"is_active": False}, format="json"),
        client.post(
            "/api/v1/provider-accounts/",
            {"name": "DO2", "kind": "digitalocean", "token_env_var": "LABGPU_PROVIDER_TOKEN_X"},
            format="json",
        ),
    ]
    assert [w.status_code for w in writes] == [403] * 5
    instance_type.refresh_from_db()
    pool.refresh_from_db()
    assert instance_type.price_per_hour != Decimal("0.01") and pool.is_active
    assert not AuditEvent.objects.filter(action__startswith="instance_type.").exists()


def test_site_admin_creates_an_instance_type_and_a_pool_using_it_audited(
    as_carol, carol, instance_type, vision_lab
):
    made = as_carol.post(
        "/api/v1/instance-types/",
        instance_type_body(instance_type.provider_account_id),
        format="json",
    )
    assert made.status_code == 201, made.content
    new_type = InstanceType.objects.get(slug="mi300x-new")
    assert new_type.price_per_hour == Decimal("1.99")
    pool = as_carol.post(
        "/api/v1/pools/",
        {
            "name": "New pool",
            "slug": "new-pool",
            "instance_type": new_type.pk,
            "region": "atl1",
            "capacity": 3,
            "granularity_minutes": 60,
            "provisioning_lead_minutes": 15,
            "max_duration_minutes": 600,
            "requires_approval": True,
            "allowed_labs": [vision_lab.pk],
        },
        format="json",
    )
    assert pool.status_code == 201, pool.content
    row = NodePool.objects.get(slug="new-pool")
    assert row.instance_type == new_type and row.capacity == 3 and row.requires_approval
    assert list(row.allowed_labs.all()) == [vision_lab]
    events = AuditEvent.objects.filter(actor=carol).order_by("id")
    assert [(e.action, e.target_id) for e in events] == [
        ("instance_type.create", str(new_type.pk)),
        ("pool.create", str(row.pk)),
    ]
    assert events[1].data["values"]["allowed_labs"] == [vision_lab.pk]


def test_deactivating_a_pool_is_audited_with_what_changed(as_carol, carol, pool):
    response = as_carol.patch(f"/api/v1/pools/{pool.pk}/", {"is_active": False}, format="json")
    assert response.status_code == 200
    pool.refresh_from_db()
    assert not pool.is_active
    event = AuditEvent.objects.get(action="pool.update", actor=carol)
    assert event.data == {"changes": {"is_active": {"from": True, "to": False}}}


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"price_per_hour": "-1"}, "price_per_hour"),
        ({"price_per_hour": "abc"}, "price_per_hour"),
        ({"gpu_count": 0}, "gpu_count"),
        ({"slug": "not a slug"}, "slug"),
        ({"gpu_vendor": "intel"}, "gpu_vendor"),
    ],
)
def test_bad_instance_type_input_is_a_400_naming_the_field(as_carol, instance_type, body, field):
    response = as_carol.post(
        "/api/v1/instance-types/",
        instance_type_body(instance_type.provider_account_id, **body),
        format="json",
    )
    assert response.status_code == 400, response.content
    fields = response.json()["extra"]["fields"]
    assert fields[field][0]
    assert not InstanceType.objects.filter(slug__in=["mi300x-new", "not a slug"]).exists()


def test_bad_pool_input_is_a_400_naming_the_field(as_carol, instance_type):
    response = as_carol.post(
        "/api/v1/pools/",
        {
            "name": "p",
            "slug": "p",
            "instance_type": instance_type.pk,
            "region": "atl1",
            "capacity": 0,
        },
        format="json",
    )
    assert response.status_code == 400
    assert "capacity" in response.json()["extra"]["fields"]


def test_site_admin_sets_and_clears_a_pools_idle_policy_audited(as_carol, carol, pool):
    assert pool.idle_reclaim_minutes is None and pool.idle_grace_minutes == 30  # off by default
    url = f"/api/v1/pools/{pool.pk}/"
    on = as_carol.patch(url, {"idle_reclaim_minutes": 20, "idle_grace_minutes": 45}, format="json")
    assert on.status_code == 200, on.content
    assert (on.json()["idle_reclaim_minutes"], on.json()["idle_grace_minutes"]) == (20, 45)
    off = as_carol.patch(url, {"idle_reclaim_minutes": None}, format="json")
    assert off.status_code == 200, off.content

    pool.refresh_from_db()
    assert (pool.idle_reclaim_minutes, pool.idle_grace_minutes) == (None, 45)
    changes = [
        e.data["changes"]
        for e in AuditEvent.objects.filter(action="pool.update", actor=carol).order_by("pk")
    ]
    assert changes == [
        {
            "idle_reclaim_minutes": {"from": None, "to": 20},
            "idle_grace_minutes": {"from": 30, "to": 45},
        },
        {"idle_reclaim_minutes": {"from": 20, "to": None}},
    ]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"idle_reclaim_minutes": 4}, "idle_reclaim_minutes"),
        ({"idle_reclaim_minutes": 1441}, "idle_reclaim_minutes"),
        ({"idle_reclaim_minutes": -5}, "idle_reclaim_minutes"),
        ({"idle_reclaim_minutes": "soon"}, "idle_reclaim_minutes"),
        ({"idle_reclaim_minutes": 7.5}, "idle_reclaim_minutes"),
        ({"idle_reclaim_minutes": [10]}, "idle_reclaim_minutes"),
        ({"idle_reclaim_minutes": 10**30}, "idle_reclaim_minutes"),
        ({"idle_reclaim_minutes": 10, "idle_grace_minutes": 0}, "idle_grace_minutes"),
        ({"idle_reclaim_minutes": 10, "idle_grace_minutes": 1441}, "idle_grace_minutes"),
        ({"idle_reclaim_minutes": 10, "idle_grace_minutes": None}, "idle_grace_minutes"),
    ],
)
def test_an_idle_policy_out_of_bounds_is_a_400_and_changes_nothing(as_carol, pool, body, field):
    response = as_carol.patch(f"/api/v1/pools/{pool.pk}/", body, format="json")
    assert response.status_code == 400, response.content
    assert response.json()["extra"]["fields"][field][0]
    pool.refresh_from_db()
    assert (pool.idle_reclaim_minutes, pool.idle_grace_minutes) == (None, 30)
    assert not AuditEvent.objects.filter(action="pool.update").exists()


def test_a_new_price_applies_to_bookings_made_afterwards_only(
    as_alice, as_carol, pool, quotas, tomorrow
):
    def book(start):
        response = as_alice.post(
            "/api/v1/bookings/",
            {
                "pool": pool.pk,
                "start": start.isoformat(),
                "end": (start + timedelta(hours=1)).isoformat(),
            },
            format="json",
        )
        assert response.status_code == 201, response.content
        return Booking.objects.get(pk=response.json()["id"])

    old_price = pool.instance_type.price_per_hour
    before = book(tomorrow)
    changed = as_carol.patch(
        f"/api/v1/instance-types/{pool.instance_type_id}/",
        {"price_per_hour": "9.5000"},
        format="json",
    )
    assert changed.status_code == 200
    after = book(tomorrow + timedelta(hours=3))
    before.refresh_from_db()
    assert before.price_per_hour == old_price != Decimal("9.5")
    assert after.price_per_hour == Decimal("9.5")
    event = AuditEvent.objects.get(action="instance_type.update")
    assert event.data["changes"]["price_per_hour"]["to"] == "9.5000"
