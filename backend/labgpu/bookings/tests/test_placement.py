"""Flexible placement (issue 25 item 3): "N hours on GPU model X between A and B, any region (or
these regions)" books the earliest window across the pools of the model the lab may book, through
the one rulebook, or answers 409 with alternatives. Checked against the booking rows."""

from datetime import timedelta

import pytest
from rest_framework.test import APIClient

from labgpu.accounts.services import token_create
from labgpu.bookings.models import Booking
from labgpu.bookings.tests.factories import BookingFactory
from labgpu.bookings.tests.test_invariants import assert_capacity_held, fire_in_parallel
from labgpu.catalog.tests.factories import InstanceTypeFactory, NodePoolFactory

pytestmark = pytest.mark.django_db

H = timedelta(hours=1)
PLACE = "/api/v1/bookings/place/"
AVAILABILITY = "/api/v1/availability/placement/"
DROP = object()  # a key left out of the body


def mi300x_pool(instance_type, region, **kwargs):
    """A pool without lead or grace, so a window opens exactly where a booking ends."""
    options = {
        "instance_type": instance_type,
        "region": region,
        "name": f"MI300X {region}",
        "slug": f"mi300x-{region}",
        "capacity": 1,
        "max_days_ahead": 60,
        "provisioning_lead_minutes": 0,
        "teardown_grace_minutes": 0,
    }
    return NodePoolFactory(**{**options, **kwargs})


def busy(pool, lab, start, end, slot=0):
    return BookingFactory(pool=pool, lab=lab, start=start, end=end, slot=slot)


@pytest.fixture
def pools(instance_type, other_lab, tomorrow):
    """tor1 busy for 2 hours from `tomorrow`, atl1 for 3 (another lab's bookings)."""
    tor1 = mi300x_pool(instance_type, "tor1")
    atl1 = mi300x_pool(instance_type, "atl1")
    busy(tor1, other_lab, tomorrow, tomorrow + 2 * H)
    busy(atl1, other_lab, tomorrow, tomorrow + 3 * H)
    return tor1, atl1


def ask(tomorrow, **extra):
    return {
        "gpu_model": "MI300X",
        "hours": "2",
        "after": tomorrow.isoformat(),
        "before": (tomorrow + 12 * H).isoformat(),
        **extra,
    }


def mine(user):
    return list(Booking.objects.filter(user=user).values_list("pool_id", "start", "end"))


def test_placement_books_the_earliest_window_across_pools(as_alice, alice, pools, quotas, tomorrow):
    tor1, _atl1 = pools

    response = as_alice.post(PLACE, ask(tomorrow), format="json")

    assert response.status_code == 201, response.content
    assert mine(alice) == [(tor1.pk, tomorrow + 2 * H, tomorrow + 4 * H)]
    assert response.json()["id"] == Booking.objects.get(user=alice).pk


def test_availability_lists_each_pools_earliest_window_earliest_first(
    as_alice, pools, quotas, tomorrow
):
    tor1, atl1 = pools

    response = as_alice.get(AVAILABILITY, {**ask(tomorrow), "gpu_model": "mi300x"})

    assert response.status_code == 200, response.content
    body = response.json()
    assert [(w["pool"], w["region"], w["start"]) for w in body["windows"]] == [
        (tor1.pk, "tor1", (tomorrow + 2 * H).isoformat().replace("+00:00", "Z")),
        (atl1.pk, "atl1", (tomorrow + 3 * H).isoformat().replace("+00:00", "Z")),
    ]
    assert body["alternatives"] == []
    assert body["duration_minutes"] == 120


def test_region_filter_keeps_to_the_asked_regions(as_alice, alice, pools, quotas, tomorrow):
    _tor1, atl1 = pools

    response = as_alice.post(PLACE, ask(tomorrow, regions=["atl1"]), format="json")

    assert response.status_code == 201, response.content
    assert mine(alice) == [(atl1.pk, tomorrow + 3 * H, tomorrow + 5 * H)]


def test_a_pool_the_lab_may_not_book_is_never_chosen_nor_shown(
    as_alice, alice, other_lab, instance_type, pools, quotas, tomorrow
):
    tor1, _atl1 = pools
    theirs = mi300x_pool(instance_type, "ams3")  # free from `tomorrow`, but only for other_lab
    theirs.allowed_labs.set([other_lab])

    listed = as_alice.get(AVAILABILITY, ask(tomorrow)).json()
    response = as_alice.post(PLACE, ask(tomorrow), format="json")

    assert theirs.pk not in {w["pool"] for w in listed["windows"]}
    assert response.status_code == 201, response.content
    assert mine(alice) == [(tor1.pk, tomorrow + 2 * H, tomorrow + 4 * H)]


def test_other_gpu_models_and_sizes_are_left_out(
    as_alice, alice, vision_lab, pools, quotas, tomorrow
):
    h100 = InstanceTypeFactory(gpu_model="H100", slug="h100-1", name="H100 ×1")
    mi300x8 = InstanceTypeFactory(gpu_model="MI300X", gpu_count=8, slug="mi300x-8", name="×8")
    mi300x_pool(h100, "nyc2", name="H100 nyc2", slug="h100-nyc2")
    eight = mi300x_pool(mi300x8, "nyc2", name="MI300X ×8 nyc2", slug="mi300x8-nyc2")

    ones = as_alice.get(AVAILABILITY, ask(tomorrow, gpu_count=1)).json()["windows"]
    every = as_alice.get(AVAILABILITY, ask(tomorrow)).json()["windows"]

    assert {w["gpu_model"] for w in every} == {"MI300X"}
    assert eight.pk not in {w["pool"] for w in ones}
    assert every[0]["pool"] == eight.pk  # free from the start: the earliest of any size


def test_nothing_fits_answers_409_with_alternatives_and_books_nothing(
    as_alice, alice, pools, quotas, tomorrow
):
    tor1, atl1 = pools

    response = as_alice.post(
        PLACE,
        ask(tomorrow, before=(tomorrow + 3 * H).isoformat(), regions=["atl1"]),
        format="json",
    )

    assert response.status_code == 409, response.content
    error = response.json()
    assert error["code"] == "no_placement"
    alternatives = [
        (a["pool"], a["region"], a["start"], a["end"]) for a in error["extra"]["alternatives"]
    ]
    iso = lambda moment: moment.isoformat().replace("+00:00", "Z")  # noqa: E731
    # Another region in time, and the asked region later: earliest first.
    assert alternatives == [
        (tor1.pk, "tor1", iso(tomorrow + 2 * H), iso(tomorrow + 4 * H)),
        (atl1.pk, "atl1", iso(tomorrow + 3 * H), iso(tomorrow + 5 * H)),
    ]
    assert mine(alice) == []
    listed = as_alice.get(
        AVAILABILITY, ask(tomorrow, before=(tomorrow + 3 * H).isoformat(), regions="atl1")
    ).json()
    assert listed["windows"] == [] and listed["alternatives"] == error["extra"]["alternatives"]


def test_a_member_limit_refusal_passes_through_unchanged(
    as_alice, alice, vision_lab, pools, quotas, tomorrow
):
    membership = alice.memberships.get(lab=vision_lab)
    membership.max_concurrent_bookings = 0
    membership.save(update_fields=["max_concurrent_bookings"])

    response = as_alice.post(PLACE, ask(tomorrow), format="json")

    assert response.status_code == 409, response.content
    assert response.json()["code"] == "member_concurrency_exceeded"
    assert mine(alice) == []


def test_a_quota_refusal_passes_through_unchanged(as_alice, alice, pools, tomorrow):
    response = as_alice.post(PLACE, ask(tomorrow), format="json")  # no quota rows at all

    assert response.status_code == 409, response.content
    assert response.json()["code"] == "quota_exceeded"
    assert mine(alice) == []


def test_a_pool_taken_after_the_choice_moves_on_to_the_next(
    as_alice, alice, other_lab, pools, quotas, tomorrow, monkeypatch
):
    """Between reading the windows and the pool lock, someone books tor1's window: the rulebook
    refuses tor1 (pool_full) and the placement books atl1's."""
    tor1, atl1 = pools
    from labgpu.bookings.placement import services as placement

    real = placement.placement_windows

    def then_taken(*args, **kwargs):
        windows = real(*args, **kwargs)
        if not Booking.objects.filter(pool=tor1, lab=other_lab, start=tomorrow + 2 * H).exists():
            busy(tor1, other_lab, tomorrow + 2 * H, tomorrow + 12 * H)
        return windows

    monkeypatch.setattr(placement, "placement_windows", then_taken)

    response = as_alice.post(PLACE, ask(tomorrow), format="json")

    assert response.status_code == 201, response.content
    assert mine(alice) == [(atl1.pk, tomorrow + 3 * H, tomorrow + 5 * H)]


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"gpu_model": ""}, "gpu_model"),
        ({"gpu_model": "X" * 65}, "gpu_model"),
        ({"gpu_model": "B200"}, "gpu_model"),
        ({"hours": "0"}, "hours"),
        ({"hours": "abc"}, "hours"),
        ({"hours": "1.01"}, "hours"),
        ({"hours": "100000"}, "hours"),
        ({"hours": "48", "before": DROP}, "hours"),  # longer than any of the pools takes
        ({"after": "2030-01-01T10:00:00"}, "after"),
        ({"before": "yesterday"}, "before"),
        ({"before": "2020-01-01T00:00:00Z"}, "before"),
        ({"regions": ["TOR 1"]}, "regions"),
        ({"regions": "tor1"}, "regions"),
        ({"gpu_count": 0}, "gpu_count"),
    ],
)
def test_bad_input_is_a_field_error_never_a_500(as_alice, pools, quotas, tomorrow, change, field):
    body = {key: value for key, value in {**ask(tomorrow), **change}.items() if value is not DROP}
    response = as_alice.post(PLACE, body, format="json")

    assert response.status_code == 400, response.content
    assert field in response.json()["extra"]["fields"], response.json()


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"gpu_model": "B200"}, "gpu_model"),
        ({"regions": "tor1,no pe"}, "regions"),
        ({"regions": "sfo3"}, "gpu_model"),
        ({"hours": "-1"}, "hours"),
        ({"count": "0"}, "count"),
        ({"lab": "abc"}, "lab"),
    ],
)
def test_bad_availability_query_is_a_field_error(as_alice, pools, tomorrow, change, field):
    response = as_alice.get(AVAILABILITY, {**ask(tomorrow), **change})

    assert response.status_code == 400, response.content
    assert field in response.json()["extra"]["fields"], response.json()


def test_the_answer_speaks_the_readers_language(alice, pools, quotas, tomorrow):
    alice.language = "zh-hans"
    alice.save(update_fields=["language"])
    client = APIClient()
    client.force_login(alice)

    unknown = client.post(PLACE, ask(tomorrow, gpu_model="B200"), format="json")
    nothing_fits = ask(tomorrow, before=(tomorrow + 3 * H).isoformat(), regions=["atl1"])
    full = client.post(PLACE, nothing_fits, format="json")

    assert unknown.status_code == 400
    fields = unknown.json()["extra"]["fields"]
    assert fields["gpu_model"] == ["没有向您的实验室开放的 B200 资源池。"]
    assert full.status_code == 409
    assert "资源池在" in full.json()["message"], full.json()


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_parallel_placements_for_the_last_slots_never_overbook(
    live_server, alice, bob, instance_type, quotas, tomorrow
):
    """Two pools, one node each, one two-hour window each before `before`: of 8 parallel
    placements exactly two are booked (one per pool), the rest answer no_placement; the database
    holds the line (I-1)."""
    tor1 = mi300x_pool(instance_type, "tor1")
    atl1 = mi300x_pool(instance_type, "atl1")
    tokens = [token_create(user=u, name="race", scopes=["book"])[1] for u in (alice, bob)]
    body = ask(tomorrow, before=(tomorrow + 2 * H).isoformat())

    responses = fire_in_parallel(f"{live_server.url}{PLACE}", tokens, [body] * 8)

    statuses = sorted(r.status_code for r in responses)
    assert statuses == [201, 201, 409, 409, 409, 409, 409, 409], [r.text for r in responses]
    assert {r.json()["code"] for r in responses if r.status_code == 409} == {"no_placement"}
    live = Booking.objects.filter(status__in=Booking.LIVE_STATUSES)
    rows = sorted(live.values_list("pool_id", "start"))
    assert rows == sorted([(tor1.pk, tomorrow), (atl1.pk, tomorrow)])
    assert_capacity_held(tor1)
    assert_capacity_held(atl1)


def test_every_pools_first_read_is_one_statement_and_later_batches_still_count(
    alice, other_lab, instance_type, tomorrow, django_assert_num_queries
):
    """tor1 is booked back to back for 40 hours (more than the first batch of the window search
    reads), atl1 is closed for 50 hours by a blackout: the earliest 2-hour windows are at +40 h
    and +50 h. The first batch of both pools is one statement; tor1's second batch one more."""
    from labgpu.bookings.placement.selectors import PlacementAsk, placement_windows
    from labgpu.catalog.tests.factories import BlackoutFactory

    tor1 = mi300x_pool(instance_type, "tor1")
    atl1 = mi300x_pool(instance_type, "atl1")
    for hour in range(40):
        busy(tor1, other_lab, tomorrow + hour * H, tomorrow + (hour + 1) * H)
    BlackoutFactory(pool=atl1, start=tomorrow - H, end=tomorrow + 50 * H)
    ask = PlacementAsk(gpu_model="MI300X", duration=2 * H, after=tomorrow, before=tomorrow + 72 * H)

    with django_assert_num_queries(2):
        windows = placement_windows([tor1, atl1], user=alice, membership=None, ask=ask)

    assert [(w.pool.pk, w.start, w.end) for w in windows] == [
        (tor1.pk, tomorrow + 40 * H, tomorrow + 42 * H),
        (atl1.pk, tomorrow + 50 * H, tomorrow + 52 * H),
    ]
