"""`GET /api/v1/bookings/compact/`: a pool-month of the bookings list at once (issue 27 item 3).

It must say what the paginated list says for the same filters — the same bookings in the same
order, each field the same — and both must say what the database rows say: the expected side
is read from the rows here (the ORM's model instances, formatted by DRF's own DateTimeField),
never from the code under test. Visibility is the list's (bookings_visible_to, I-6): a lab's
bookings reach its members and site admins only, with names and purposes.
"""

from datetime import timedelta

import pytest
from rest_framework import serializers

from conftest import client_for
from labgpu.accounts.models import Lab, Membership, User
from labgpu.accounts.tests.factories import LabFactory, MembershipFactory, UserFactory
from labgpu.bookings.models import Booking, BookingSeries
from labgpu.bookings.tests.factories import BookingFactory
from labgpu.catalog.tests.factories import NodePoolFactory

pytestmark = pytest.mark.django_db

URL = "/api/v1/bookings/compact/"
SAME_AS_LIST = ["id", "start", "end", "pending_end", "status", "purpose", "series", "gpu_count",
                "on_demand"]  # fmt: skip
moment = serializers.DateTimeField().to_representation


@pytest.fixture
def month(tomorrow):
    """The window asked: four days from tomorrow, as a calendar asks for its month."""
    return tomorrow, tomorrow + timedelta(days=4)


@pytest.fixture
def bookings(alice, bob, mallory, vision_lab, other_lab, pool, month):
    """Bookings of every status by alice, bob (her labmate) and mallory (another lab), inside,
    across and just outside the window, with microseconds, non-ASCII purposes, waiting
    extensions and a series; and some in another pool."""
    start, end = month
    series = BookingSeries.objects.create(
        lab=vision_lab,
        user=alice,
        pool=pool,
        frequency="daily",
        timezone="UTC",
        first_start=start,
        duration_minutes=60,
        count=3,
    )
    made = []
    people = [(alice, vision_lab), (bob, vision_lab), (mallory, other_lab)]
    for index, status in enumerate(Booking.Status.values * 2):
        user, lab = people[index % 3]
        b_start = start + timedelta(hours=5 * index - 2, microseconds=(index % 4) * 250_001)
        made.append(
            BookingFactory(
                user=user,
                lab=lab,
                pool=pool,
                start=b_start,
                end=b_start + timedelta(minutes=90 + 30 * (index % 3)),
                status=status,
                slot=index,
                gpu_count=1 + index % 4,
                purpose=f"训练 ResNet «{index}» of {user.username}" if index % 2 else "",
                on_demand=index % 5 == 1,
                pending_end=b_start + timedelta(hours=4) if index % 3 == 0 else None,
                series=series if index % 7 == 0 and lab == vision_lab else None,
            )
        )
    # The window is half-open, as the list's filters are: these two do not overlap it.
    made.append(BookingFactory(user=alice, lab=vision_lab, pool=pool, start=start - timedelta(
        hours=1), end=start, slot=90))  # fmt: skip
    made.append(BookingFactory(user=alice, lab=vision_lab, pool=pool, start=end, slot=91))
    elsewhere = NodePoolFactory(instance_type=pool.instance_type, name="elsewhere", slug="else")
    made.append(BookingFactory(user=alice, lab=vision_lab, pool=elsewhere, start=start, slot=0))
    return made


def window_query(pool, month, **more):
    start, end = month
    return {
        "pool": pool.pk,
        "start_after": start.isoformat(),
        "end_before": end.isoformat(),
        **more,
    }


def full_list(client, query) -> list[dict]:
    response = client.get("/api/v1/bookings/", {**query, "page_size": 500})
    assert response.status_code == 200, response.content
    assert response.json()["next"] is None
    return response.json()["results"]


def compact(client, query) -> dict:
    response = client.get(URL, query)
    assert response.status_code == 200, response.content
    return response.json()


def rows_visible_to(user: User, pool, month) -> list[Booking]:
    """The database's own answer: the user's labs' rows (every lab's for a site admin) in the
    pool that overlap [start, end), in start order."""
    start, end = month
    labs = set(Membership.objects.filter(user=user).values_list("lab_id", flat=True))
    rows = Booking.objects.filter(pool=pool).select_related("lab", "user")
    return sorted(
        (
            b
            for b in rows
            if (user.is_staff or b.lab_id in labs) and b.end > start and b.start < end
        ),
        key=lambda b: (b.start, b.pk),
    )


def expected_from_rows(rows: list[Booking]) -> list[dict]:
    return [
        {
            "id": b.pk,
            "start": moment(b.start),
            "end": moment(b.end),
            "pending_end": None if b.pending_end is None else moment(b.pending_end),
            "status": b.status,
            "purpose": b.purpose,
            "series": b.series_id,
            "gpu_count": b.gpu_count,
            "on_demand": b.on_demand,
            "lab": {"id": b.lab.pk, "name": b.lab.name, "slug": b.lab.slug},
            "user": {
                "id": b.user.pk,
                "username": b.user.username,
                "first_name": b.user.first_name,
                "last_name": b.user.last_name,
            },
        }
        for b in rows
    ]


def resolved(answer: dict) -> list[dict]:
    """The compact answer's bookings with their lab and user looked up, as the list nests them."""
    labs = {lab["id"]: lab for lab in answer["labs"]}
    users = {user["id"]: user for user in answer["users"]}
    assert len(labs) == len(answer["labs"]) and len(users) == len(answer["users"])  # each once
    return [{**b, "lab": labs[b["lab"]], "user": users[b["user"]]} for b in answer["bookings"]]


@pytest.mark.parametrize("persona", ["alice", "bob", "mallory", "carol"])
def test_compact_list_says_what_the_full_list_and_the_rows_say(persona, request, bookings, pool,
                                                               month):  # fmt: skip
    user = request.getfixturevalue(persona)
    client = client_for(user)
    query = window_query(pool, month)
    answer = compact(client, query)
    listed = full_list(client, query)
    expected = expected_from_rows(rows_visible_to(user, pool, month))
    assert len(expected) > 5  # the fixture gives every persona something to see
    assert answer["pool"] == pool.pk and answer["count"] == len(answer["bookings"]) == len(expected)
    got = resolved(answer)
    # The same bookings in the same order as the list and as the rows...
    assert [b["id"] for b in got] == [b["id"] for b in listed] == [b["id"] for b in expected]
    # ...and field by field the same as the list says and as the rows say.
    for mine, theirs, row in zip(got, listed, expected, strict=True):
        assert set(mine) == {*SAME_AS_LIST, "lab", "user"}
        for field in [*SAME_AS_LIST, "lab", "user"]:
            assert mine[field] == theirs[field] == row[field], (persona, mine["id"], field)
    # Each lab and user the bookings refer to is written once, and no other.
    assert sorted(lab["id"] for lab in answer["labs"]) == sorted({b["lab"]["id"] for b in expected})
    assert sorted(u["id"] for u in answer["users"]) == sorted({b["user"]["id"] for b in expected})


def test_compact_list_is_smaller_than_the_full_list(bookings, alice, pool, month):
    client = client_for(alice)
    query = window_query(pool, month)
    full = client.get("/api/v1/bookings/", {**query, "page_size": 500})
    small = client.get(URL, query)
    assert small.json()["count"] == full.json()["count"] > 5
    assert len(small.content) * 2 < len(full.content)


def test_other_labs_bookings_never_reach_a_member_nor_an_outsider(bookings, alice, mallory, pool,
                                                                  month):  # fmt: skip
    query = window_query(pool, month)
    response = client_for(alice).get(URL, query)
    assert response.status_code == 200
    theirs = [b for b in bookings if b.lab_id == mallory.memberships.get().lab_id]
    assert theirs and all(b.purpose or b.pk for b in theirs)
    body = response.content.decode()
    # Not their ids, their lab, their people nor their purposes (I-6).
    assert {b["id"] for b in response.json()["bookings"]}.isdisjoint(b.pk for b in theirs)
    assert "Language Lab" not in body and "mallory" not in body
    assert not any(b.purpose and b.purpose in body for b in theirs)
    # Someone in no lab sees nothing at all; so does someone in a lab with no bookings.
    outsider = UserFactory(username="outsider")
    assert compact(client_for(outsider), query) == {
        "pool": pool.pk, "count": 0, "labs": [], "users": [], "bookings": []
    }  # fmt: skip
    loner = UserFactory(username="loner")
    MembershipFactory(user=loner, lab=LabFactory(name="Empty Lab", slug="empty"))
    assert compact(client_for(loner), query)["count"] == 0


def test_a_member_of_two_labs_sees_both(bookings, alice, other_lab, pool, month):
    MembershipFactory(user=alice, lab=other_lab)
    answer = compact(client_for(alice), window_query(pool, month))
    assert {lab["slug"] for lab in answer["labs"]} == {"vision", "language"}
    assert [b["id"] for b in answer["bookings"]] == [
        b.pk for b in rows_visible_to(alice, pool, month)
    ]


@pytest.mark.parametrize(
    "more",
    [
        {"status": ["scheduled"]},
        {"status": ["pending", "ready", "cancelled"]},
        {"mine": "true"},
        {"mine": "false"},
        {"mine": "true", "status": ["scheduled", "completed"]},
    ],
)
def test_compact_filters_as_the_list_does(more, bookings, bob, pool, month):
    client = client_for(bob)
    query = window_query(pool, month, **more)
    got = compact(client, query)["bookings"]
    listed = full_list(client, query)
    assert [b["id"] for b in got] == [b["id"] for b in listed]
    rows = rows_visible_to(bob, pool, month)
    if "status" in more:
        rows = [b for b in rows if b.status in more["status"]]
    if more.get("mine") == "true":
        rows = [b for b in rows if b.user_id == bob.pk]
    assert [b["id"] for b in got] == [b.pk for b in rows]
    assert rows or more == {"mine": "true", "status": ["scheduled", "completed"]}


LONG = timedelta(days=93)


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"pool": None}, "pool"),
        ({"pool": "abc"}, "pool"),
        ({"pool": "0"}, "pool"),
        ({"pool": "-3"}, "pool"),
        ({"pool": str(2**63)}, "pool"),
        ({"pool": "1.5"}, "pool"),
        ({"start_after": None}, "start_after"),
        ({"start_after": "yesterday"}, "start_after"),
        ({"start_after": "2030-01-01T10:00:00"}, "start_after"),  # naive (I-7)
        ({"start_after": "99999-01-01T10:00:00Z"}, "start_after"),
        ({"start_after": "0001-01-01T00:00:00+00:00"}, "start_after"),
        ({"end_before": None}, "end_before"),
        ({"end_before": "2030-13-01T00:00:00Z"}, "end_before"),
        ({"end_before": "before"}, "end_before"),
        ({"status": "bogus"}, "status"),
        ({"status": ""}, "status"),
        ({"mine": "maybe"}, "mine"),
    ],
)
def test_bad_parameters_are_a_400_naming_the_field(change, field, alice, pool, month):
    query = {k: v for k, v in {**window_query(pool, month), **change}.items() if v is not None}
    response = client_for(alice).get(URL, query)
    assert response.status_code == 400, response.content
    body = response.json()
    assert body["code"] and body["message"]
    assert field in body["extra"]["fields"], body


def test_a_window_backwards_empty_or_too_long_is_a_400_on_its_end(alice, pool, month):
    client = client_for(alice)
    start, _ = month
    for wrong_end, code in [
        (start - timedelta(hours=1), "end_before_start"),
        (start, "end_before_start"),
        (start + LONG, "range_too_long"),
    ]:
        response = client.get(URL, window_query(pool, (start, wrong_end)))
        assert response.status_code == 400, response.content
        assert list(response.json()["extra"]["fields"]) == ["end_before"]
        assert code in str(response.json())
    # 92 days is allowed, and offsets as far as Python reads them are moved to UTC first.
    assert (
        client.get(URL, window_query(pool, (start, start + timedelta(days=92)))).status_code == 200
    )
    far = {"start_after": "2030-01-01T00:00:00+20:44", "end_before": "2030-01-02T00:00:00-23:59"}
    assert client.get(URL, {**window_query(pool, month), **far}).status_code == 200


def test_a_pool_nobody_books_or_that_does_not_exist_is_empty(alice, pool, month):
    client = client_for(alice)
    assert compact(client, window_query(pool, month))["count"] == 0
    assert compact(client, {**window_query(pool, month), "pool": 2**63 - 1})["bookings"] == []


def test_anonymous_callers_are_refused(pool, month):
    from rest_framework.test import APIClient

    response = APIClient().get(URL, window_query(pool, month))
    assert response.status_code in (401, 403)
    assert "message" in response.json()


def test_lab_and_user_rows_are_the_database_rows(bookings, alice, vision_lab, pool, month):
    """The `labs` and `users` tables say what the lab and user rows say, not what a booking does."""
    Lab.objects.filter(pk=vision_lab.pk).update(name="Vision «Lab» 视觉")
    User.objects.filter(pk=alice.pk).update(first_name="Alice", last_name="Li")
    answer = compact(client_for(alice), window_query(pool, month))
    assert {"id": vision_lab.pk, "name": "Vision «Lab» 视觉", "slug": "vision"} in answer["labs"]
    assert {
        "id": alice.pk,
        "username": "alice",
        "first_name": "Alice",
        "last_name": "Li",
    } in answer["users"]
