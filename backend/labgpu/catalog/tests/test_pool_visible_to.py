"""pool_visible_to (one pool, one prepared statement) says what pools_visible_to says (I-6).

The calendar's reads look their pool up through it; the expected side is the queryset every other
pool read uses, and the allowed-lab rows themselves, for every persona and every kind of pool.
"""

from datetime import timedelta

import pytest

from conftest import client_for
from labgpu.accounts.tests.factories import LabFactory, MembershipFactory, UserFactory
from labgpu.catalog.models import NodePool
from labgpu.catalog.selectors import pool_visible_to, pools_visible_to
from labgpu.catalog.tests.factories import NodePoolFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def pools(instance_type, vision_lab, other_lab):
    """Open and restricted pools, active and not, and one allowed to two labs."""
    third = LabFactory(name="Third Lab", slug="third")
    made = {}
    for active in (True, False):
        for allowed in ((), (vision_lab,), (other_lab,), (other_lab, third), (vision_lab, third)):
            name = f"{'on' if active else 'off'}-{'-'.join(lab.slug for lab in allowed) or 'all'}"
            pool = NodePoolFactory(instance_type=instance_type, name=name, slug=name)
            pool.is_active = active
            pool.save(update_fields=["is_active"])
            pool.allowed_labs.set(allowed)
            made[name] = pool
    return made


@pytest.fixture
def personas(alice, bob, mallory, carol, vision_lab, other_lab):
    twice = UserFactory(username="twice")
    MembershipFactory(user=twice, lab=vision_lab)
    MembershipFactory(user=twice, lab=other_lab)
    return {
        "alice": alice,
        "bob": bob,
        "mallory": mallory,
        "carol": carol,
        "twice": twice,
        "outsider": UserFactory(username="outsider"),
        "staff-member": MembershipFactory(user=UserFactory(username="sm", is_staff=True)).user,
    }


def test_one_pool_lookup_says_what_the_pool_queryset_says(pools, personas):
    for name, user in personas.items():
        expected = set(pools_visible_to(user).values_list("pk", flat=True))
        got = {pool.pk for pool in pools.values() if pool_visible_to(user, pool.pk) is not None}
        assert got == expected, name
    # The rule itself, from the rows: alice sees the active pools open to all or to her lab.
    alice_sees = {
        p.pk
        for p in NodePool.objects.filter(is_active=True)
        if not p.allowed_labs.exists() or p.allowed_labs.filter(slug="vision").exists()
    }
    assert {p.pk for p in pools.values() if pool_visible_to(personas["alice"], p.pk)} == alice_sees
    assert len(alice_sees) == 3  # open, vision, vision + third
    assert not any(pool_visible_to(personas["outsider"], p.pk) for p in pools.values())
    assert all(pool_visible_to(personas["carol"], p.pk) for p in pools.values())


def test_the_pool_comes_back_as_the_row_says(pools, alice):
    pool = pools["on-all"]
    got = pool_visible_to(alice, pool.pk)
    assert got is not None
    for field in NodePool._meta.concrete_fields:
        assert getattr(got, field.attname) == getattr(pool, field.attname), field.name


@pytest.mark.parametrize("pool_id", [0, -1, 2**63, 2**63 - 1, 10**30])
def test_ids_no_pool_can_have_find_none(pool_id, carol):
    assert pool_visible_to(carol, pool_id) is None


@pytest.mark.parametrize("endpoint", ["busy", "availability"])
def test_calendar_reads_of_a_pool_one_may_not_see_are_404(endpoint, pools, alice, tomorrow):
    client = client_for(alice)
    window = {"start": tomorrow.isoformat(), "end": (tomorrow + timedelta(days=1)).isoformat()}
    for name, pool in pools.items():
        response = client.get(f"/api/v1/pools/{pool.pk}/{endpoint}/", window)
        visible = pools_visible_to(alice).filter(pk=pool.pk).exists()
        assert response.status_code == (200 if visible else 404), (name, response.content)
        if not visible:
            assert response.json()["code"] == "not_found"
    for wrong in ["abc", "1e3", "٣", "9" * 30, str(2**63), "0", "-1"]:
        response = client.get(f"/api/v1/pools/{wrong}/{endpoint}/", window)
        assert response.status_code == 404, (wrong, response.content)
