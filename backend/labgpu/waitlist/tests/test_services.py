"""The waitlist as a service: first come first served, caps, held offers that lapse to the next
entry, opt-in automatic booking, and every event that frees capacity reaching the waitlist.

Checked against the database's own rows (bookings and their statuses, the outbox, notifications),
never against what the service returned alone.
"""

from datetime import timedelta

import pytest
from django.core import mail
from django.db import DatabaseError

from labgpu.accounts.tests.factories import MembershipFactory, UserFactory
from labgpu.bookings.models import Booking, Notification
from labgpu.bookings.services import booking_cancel, booking_create, booking_reject
from labgpu.catalog.services import pool_save
from labgpu.catalog.tests.factories import NodePoolFactory
from labgpu.chat.models import ChatDelivery
from labgpu.chat.services import channel_create
from labgpu.chat.tests.receiver import receiver
from labgpu.core.errors import ApplicationError, Conflict
from labgpu.core.models import OutboxMessage
from labgpu.core.timeutils import now
from labgpu.provisioning.models import Node
from labgpu.provisioning.services.nodes import booking_complete_if_done, node_fail
from labgpu.provisioning.tests.factories import NodeFactory
from labgpu.waitlist import services
from labgpu.waitlist.models import WaitlistEntry

pytestmark = pytest.mark.django_db
Status = WaitlistEntry.Status


@pytest.fixture
def full_pool(instance_type, quotas, alice, tomorrow):
    """A one-node pool that alice's booking fills tomorrow 2 hours."""
    pool = NodePoolFactory(instance_type=instance_type, capacity=1, max_days_ahead=60)
    booking, _ = booking_create(
        user=alice, pool=pool, start=tomorrow, end=tomorrow + timedelta(hours=2)
    )
    return pool, booking


def member(lab, name, **kwargs):
    user = UserFactory(username=name, **kwargs)
    MembershipFactory(user=user, lab=lab)
    return user


def join(user, pool, tomorrow, **kwargs):
    return services.waitlist_join(
        user=user,
        pool=pool,
        earliest_start=tomorrow,
        latest_end=tomorrow + timedelta(hours=2),
        duration_minutes=120,
        **kwargs,
    )


def promotions_run() -> int:
    """Run the promotions the outbox holds, as the worker would, and drop the rows."""
    ran = 0
    for message in OutboxMessage.objects.filter(task=services.PROMOTE_TASK).order_by("id"):
        services.waitlist_promote(pool_id=message.args[0])
        message.delete()
        ran += 1
    return ran


def _promotion_fails(*, pool_id):
    raise DatabaseError("lost the connection mid-promotion")


def test_a_full_window_takes_waiters_and_offers_nothing_while_full(full_pool, bob, tomorrow):
    pool, _ = full_pool
    entry = join(bob, pool, tomorrow)
    assert promotions_run() == 1  # joining asks once
    entry.refresh_from_db()
    assert entry.status == Status.WAITING and entry.booking is None
    assert not Booking.objects.filter(user=bob).exists()


def test_cancel_offers_the_slot_to_the_first_in_line_and_holds_it(
    full_pool, alice, bob, vision_lab, tomorrow
):
    pool, booking = full_pool
    first = join(bob, pool, tomorrow)
    second_user = member(vision_lab, "dave")
    second = join(second_user, pool, tomorrow)
    promotions_run()
    booking_cancel(actor=alice, booking=booking)
    assert promotions_run() == 1
    first.refresh_from_db()
    second.refresh_from_db()
    assert first.status == Status.OFFERED and second.status == Status.WAITING
    held = Booking.objects.get(pk=first.booking_id)
    assert held.status == Booking.Status.OFFERED and held.user == bob
    assert (held.start, held.end) == (tomorrow, tomorrow + timedelta(hours=2))
    assert first.offer_expires_at == first.offered_at + timedelta(
        minutes=pool.waitlist_hold_minutes
    )
    # The held slot is the database's: nobody else books it.
    with pytest.raises(Conflict) as refused:
        booking_create(user=alice, pool=pool, start=tomorrow, end=tomorrow + timedelta(hours=2))
    assert refused.value.code == "pool_full"


def assert_offered_not_booked_directly(entry, pool, lab, tomorrow) -> None:
    """The room made in the pool went to `entry` (offered) before anyone could book it directly."""
    with pytest.raises(Conflict) as refused:
        booking_create(
            user=member(lab, "dave"),
            pool=pool,
            start=tomorrow,
            end=tomorrow + timedelta(hours=2),
        )
    assert refused.value.code == "pool_full"
    entry.refresh_from_db()
    assert entry.status == Status.OFFERED


def test_a_freed_slot_is_offered_before_anyone_can_book_it_directly(
    full_pool, alice, bob, vision_lab, tomorrow
):
    """Between the cancel's commit and the promotion task, a direct booking used to take the
    freed time ahead of the line; the offer is now made in the cancel's own transaction."""
    pool, booking = full_pool
    entry = join(bob, pool, tomorrow)
    promotions_run()
    booking_cancel(actor=alice, booking=booking)  # committed; no promotion task has run
    assert_offered_not_booked_directly(entry, pool, vision_lab, tomorrow)
    assert Booking.objects.get(pk=entry.booking_id).user == bob
    assert promotions_run() == 1  # the task, the backstop, finds nothing more to offer
    assert WaitlistEntry.objects.filter(status=Status.OFFERED).count() == 1


def test_a_failing_promotion_leaves_the_cancel_and_the_task_promotes_later(
    full_pool, alice, bob, tomorrow, monkeypatch
):
    pool, booking = full_pool
    entry = join(bob, pool, tomorrow)
    promotions_run()
    real = services.waitlist_promote
    monkeypatch.setattr(services, "waitlist_promote", _promotion_fails)
    booking_cancel(actor=alice, booking=booking)
    assert Booking.objects.get(pk=booking.pk).status == Booking.Status.CANCELLED
    entry.refresh_from_db()
    assert entry.status == Status.WAITING
    monkeypatch.setattr(services, "waitlist_promote", real)
    assert promotions_run() == 1
    entry.refresh_from_db()
    assert entry.status == Status.OFFERED


def test_an_offer_not_taken_lapses_to_the_next_entry(full_pool, alice, bob, vision_lab, tomorrow):
    pool, booking = full_pool
    first = join(bob, pool, tomorrow)
    second = join(member(vision_lab, "dave"), pool, tomorrow)
    booking_cancel(actor=alice, booking=booking)
    promotions_run()
    first.refresh_from_db()
    assert services.waitlist_offer_expire(entry_id=first.pk) is False  # not yet due
    WaitlistEntry.objects.filter(pk=first.pk).update(offer_expires_at=now() - timedelta(seconds=1))
    assert services.waitlist_offer_expire(entry_id=first.pk) is True
    promotions_run()
    first.refresh_from_db()
    second.refresh_from_db()
    assert first.status == Status.LAPSED
    assert Booking.objects.get(pk=first.booking_id).status == Booking.Status.EXPIRED
    assert second.status == Status.OFFERED
    assert Booking.objects.get(pk=second.booking_id).status == Booking.Status.OFFERED


def test_the_sweep_lapses_due_offers_and_offers_the_next(
    full_pool, alice, bob, vision_lab, tomorrow, monkeypatch
):
    pool, booking = full_pool
    first = join(bob, pool, tomorrow)
    second = join(member(vision_lab, "dave"), pool, tomorrow)
    with monkeypatch.context() as patched:
        patched.setattr(services, "waitlist_promote", _promotion_fails)  # in the cancel's own
        booking_cancel(actor=alice, booking=booking)  # transaction, the promotion failed
    OutboxMessage.objects.all().delete()  # and the promotion task was lost
    assert services.waitlist_sweep()["promoted"] == 1
    WaitlistEntry.objects.filter(pk=first.pk).update(offer_expires_at=now() - timedelta(seconds=1))
    result = services.waitlist_sweep()
    # The lapse released the slot, and its own transaction offered it to the next in line.
    assert result["lapsed"] == 1 and result["promoted"] == 0
    second.refresh_from_db()
    assert second.status == Status.OFFERED


def test_taking_the_offer_schedules_the_held_booking(full_pool, alice, bob, tomorrow):
    pool, booking = full_pool
    entry = join(bob, pool, tomorrow)
    booking_cancel(actor=alice, booking=booking)
    promotions_run()
    entry.refresh_from_db()
    services.waitlist_offer_accept(actor=bob, entry=entry)
    entry.refresh_from_db()
    assert entry.status == Status.BOOKED
    assert Booking.objects.get(pk=entry.booking_id).status == Booking.Status.SCHEDULED
    with pytest.raises(Conflict) as again:
        services.waitlist_offer_accept(actor=bob, entry=entry)
    assert again.value.code == "offer_closed"


def test_only_the_owner_takes_an_offer(full_pool, alice, bob, tomorrow):
    pool, booking = full_pool
    entry = join(bob, pool, tomorrow)
    booking_cancel(actor=alice, booking=booking)
    promotions_run()
    with pytest.raises(ApplicationError) as refused:
        services.waitlist_offer_accept(actor=alice, entry=entry)
    assert refused.value.code == "not_your_entry"


def test_a_lapsed_offer_cannot_be_taken(full_pool, alice, bob, tomorrow):
    pool, booking = full_pool
    entry = join(bob, pool, tomorrow)
    booking_cancel(actor=alice, booking=booking)
    promotions_run()
    WaitlistEntry.objects.filter(pk=entry.pk).update(offer_expires_at=now() - timedelta(seconds=1))
    with pytest.raises(Conflict) as refused:
        services.waitlist_offer_accept(actor=bob, entry=entry)
    assert refused.value.code == "offer_expired"
    entry.refresh_from_db()
    assert entry.status == Status.LAPSED
    assert Booking.objects.get(pk=entry.booking_id).status == Booking.Status.EXPIRED


def test_declining_passes_the_slot_on(full_pool, alice, bob, vision_lab, tomorrow):
    pool, booking = full_pool
    first = join(bob, pool, tomorrow)
    second = join(member(vision_lab, "dave"), pool, tomorrow)
    booking_cancel(actor=alice, booking=booking)
    promotions_run()
    first.refresh_from_db()
    services.waitlist_offer_decline(actor=bob, entry=first)
    promotions_run()
    second.refresh_from_db()
    assert WaitlistEntry.objects.get(pk=first.pk).status == Status.DECLINED
    assert second.status == Status.OFFERED


def test_opted_in_entries_are_booked_at_once(full_pool, alice, bob, tomorrow):
    pool, booking = full_pool
    entry = join(bob, pool, tomorrow, auto_book=True)
    booking_cancel(actor=alice, booking=booking)
    promotions_run()
    entry.refresh_from_db()
    assert entry.status == Status.BOOKED
    assert Booking.objects.get(pk=entry.booking_id).status == Booking.Status.SCHEDULED


def test_an_entry_the_rules_refuse_keeps_its_place_and_the_next_is_offered(
    full_pool, alice, bob, vision_lab, tomorrow
):
    pool, booking = full_pool
    first = join(bob, pool, tomorrow)
    second_user = member(vision_lab, "dave")
    second = join(second_user, pool, tomorrow)
    # bob may hold no booking at all at the moment (his member limit): the rulebook refuses him.
    bob.memberships.filter(lab=vision_lab).update(max_concurrent_bookings=0)
    booking_cancel(actor=alice, booking=booking)
    promotions_run()
    first.refresh_from_db()
    second.refresh_from_db()
    assert first.status == Status.WAITING
    assert second.status == Status.OFFERED


def test_a_window_that_does_not_fit_is_passed_over_not_dropped(
    full_pool, alice, bob, vision_lab, tomorrow
):
    pool, booking = full_pool
    later = services.waitlist_join(
        user=bob,
        pool=pool,
        earliest_start=tomorrow + timedelta(days=3),
        latest_end=tomorrow + timedelta(days=3, hours=1),
        duration_minutes=60,
    )
    # bob's entry fits at once (that day is free): it is offered; dave's waits for tomorrow.
    dave = join(member(vision_lab, "dave"), pool, tomorrow)
    promotions_run()
    later.refresh_from_db()
    assert later.status == Status.OFFERED
    booking_cancel(actor=alice, booking=booking)
    promotions_run()
    dave.refresh_from_db()
    assert dave.status == Status.OFFERED


def test_a_gpu_model_entry_is_offered_in_any_pool_of_that_model(
    full_pool, instance_type, bob, tomorrow
):
    entry = services.waitlist_join(
        user=bob,
        gpu_model="mi300x",
        earliest_start=tomorrow,
        latest_end=tomorrow + timedelta(hours=2),
        duration_minutes=120,
    )
    promotions_run()
    entry.refresh_from_db()
    assert entry.status == Status.WAITING
    other = pool_save(actor=UserFactory(username="carol", is_staff=True), **{
        "name": "MI300X atl1", "slug": "mi300x-atl1", "instance_type": instance_type,
        "region": "atl1", "capacity": 1, "max_days_ahead": 60,
    })  # fmt: skip
    services.waitlist_promote(pool_id=other.pk)
    entry.refresh_from_db()
    assert entry.status == Status.OFFERED
    assert Booking.objects.get(pk=entry.booking_id).pool_id == other.pk


@pytest.mark.parametrize("cap", ["user", "lab"])
def test_caps_on_active_entries_answer_a_clear_error(
    settings, cap, full_pool, bob, vision_lab, tomorrow
):
    pool, _ = full_pool
    settings.LABGPU_WAITLIST_MAX_PER_USER = 2 if cap == "user" else 10
    settings.LABGPU_WAITLIST_MAX_PER_LAB = 2 if cap == "lab" else 10
    join(bob, pool, tomorrow)
    join(bob if cap == "user" else member(vision_lab, "dave"), pool, tomorrow)
    with pytest.raises(Conflict) as refused:
        join(bob, pool, tomorrow)
    assert refused.value.code == f"waitlist_{cap}_cap"
    assert refused.value.extra["limit"] == 2
    # Leaving frees a place under the cap.
    services.waitlist_leave(actor=bob, entry=WaitlistEntry.objects.filter(user=bob).first())
    if cap == "user":
        join(bob, pool, tomorrow)


def test_bad_windows_are_refused_with_the_field(full_pool, bob, tomorrow):
    pool, _ = full_pool
    cases = [
        ({"latest_end": tomorrow - timedelta(hours=1)}, "end_before_start", "latest_end"),
        ({"duration_minutes": 180}, "duration_exceeds_window", "duration_minutes"),
        ({"duration_minutes": 45}, "off_granularity", "duration_minutes"),
        ({"pool": None}, "pool_or_model", "pool"),
        ({"pool": None, "gpu_model": "B200"}, "no_pool_of_model", "gpu_model"),
    ]
    for change, code, field in cases:
        asked = {
            "user": bob,
            "pool": pool,
            "earliest_start": tomorrow,
            "latest_end": tomorrow + timedelta(hours=2),
            "duration_minutes": 120,
        } | change
        with pytest.raises(ApplicationError) as refused:
            services.waitlist_join(**asked)
        assert (refused.value.code, list(refused.value.extra["fields"])) == (code, [field])


# --- every event that frees capacity reaches the waitlist -------------------------------------


def _queued_for(pool) -> bool:
    return OutboxMessage.objects.filter(task=services.PROMOTE_TASK, args=[pool.pk]).exists()


def _running(full_pool):
    """alice's booking of the full pool, running on a ready node."""
    pool, booking = full_pool
    Booking.objects.filter(pk=booking.pk).update(status=Booking.Status.READY)
    node = NodeFactory(booking=booking, status=Node.Status.READY)
    booking.refresh_from_db()
    OutboxMessage.objects.all().delete()
    return pool, booking, node


def test_an_early_end_frees_the_slot_for_the_waitlist_once_the_node_is_gone(
    full_pool, alice, bob, tomorrow
):
    pool, booking, node = _running(full_pool)
    entry = join(bob, pool, tomorrow)
    promotions_run()
    booking_cancel(actor=alice, booking=booking)  # ends early: the node still holds the slot
    OutboxMessage.objects.exclude(task=services.PROMOTE_TASK).delete()
    assert not _queued_for(pool)
    Node.objects.filter(pk=node.pk).update(status=Node.Status.DESTROYED)
    booking_complete_if_done(booking_id=booking.pk)
    assert _queued_for(pool)
    promotions_run()
    entry.refresh_from_db()
    assert entry.status == Status.OFFERED


def test_an_idle_reclaim_frees_the_slot_for_the_waitlist(full_pool, bob, tomorrow):
    pool, booking, node = _running(full_pool)
    entry = join(bob, pool, tomorrow)
    promotions_run()
    # What health.utilisation's reclaim leaves: an ending booking, ended now, with the reason.
    Booking.objects.filter(pk=booking.pk).update(
        status=Booking.Status.ENDING, ended_at=now(), end_reason="idle"
    )
    Node.objects.filter(pk=node.pk).update(status=Node.Status.DESTROYED)
    booking_complete_if_done(booking_id=booking.pk)
    assert promotions_run() == 1
    entry.refresh_from_db()
    assert entry.status == Status.OFFERED


def test_a_failed_nodes_slot_goes_to_the_waitlist(full_pool, bob, tomorrow):
    pool, booking, node = _running(full_pool)
    entry = join(bob, pool, tomorrow)
    promotions_run()
    node_fail(node_id=node.pk, reason="gpu lost", replace=False)
    assert Booking.objects.get(pk=booking.pk).status == Booking.Status.FAILED
    assert promotions_run() == 1
    entry.refresh_from_db()
    assert entry.status == Status.OFFERED


def test_a_capacity_increase_goes_to_the_waitlist(full_pool, carol, bob, tomorrow):
    pool, _ = full_pool
    entry = join(bob, pool, tomorrow)
    promotions_run()
    pool_save(actor=carol, pool=pool, capacity=2)
    assert promotions_run() == 1
    entry.refresh_from_db()
    assert entry.status == Status.OFFERED


def test_added_capacity_is_offered_before_anyone_can_book_it_directly(
    full_pool, carol, bob, vision_lab, tomorrow
):
    """As a cancel's freed slot: between the pool's save and the promotion task, a direct
    booking used to take the new capacity ahead of the line."""
    pool, _ = full_pool
    entry = join(bob, pool, tomorrow)
    promotions_run()
    pool_save(actor=carol, pool=pool, capacity=2)  # committed; no promotion task has run
    assert_offered_not_booked_directly(entry, pool, vision_lab, tomorrow)
    assert promotions_run() == 1  # the task, the backstop, finds nothing more to offer
    assert WaitlistEntry.objects.filter(status=Status.OFFERED).count() == 1


def test_a_rejected_pending_booking_frees_its_slot_for_the_waitlist(
    instance_type, quotas, alice, bob, vision_lab, tomorrow
):
    pool = NodePoolFactory(
        instance_type=instance_type, capacity=1, max_days_ahead=60, requires_approval=True
    )
    booking, _ = booking_create(
        user=alice, pool=pool, start=tomorrow, end=tomorrow + timedelta(hours=2)
    )
    dave = member(vision_lab, "dave")
    entry = join(dave, pool, tomorrow)
    promotions_run()
    booking_reject(actor=bob, booking=booking, reason="not now")
    assert promotions_run() == 1
    entry.refresh_from_db()
    assert entry.status == Status.OFFERED
    # Taken in a pool that needs approval, the offer waits for a lab admin like any booking.
    services.waitlist_offer_accept(actor=dave, entry=entry)
    assert Booking.objects.get(pk=entry.booking_id).status == Booking.Status.PENDING


# --- the person is told, in their language ------------------------------------------------------


@pytest.fixture
def sink(settings):
    """A local chat receiver (labgpu.chat's own), reachable because loopback is allowed here."""
    settings.LABGPU_CHAT_ALLOW_LOOPBACK = True
    with receiver() as state:
        yield state


def test_the_offer_is_told_in_the_app_by_mail_and_chat_in_the_recipients_language(
    full_pool, alice, vision_lab, tomorrow, django_capture_on_commit_callbacks, sink
):
    pool, booking = full_pool
    wei = member(vision_lab, "wei", language="zh-hans", timezone="Asia/Shanghai")
    channel = channel_create(
        actor=wei,
        kind="webhook",
        name="mine",
        url=f"{sink.base_url}/in",
        secret="SECtest-signing-secret-0123456789",
        language="zh-hans",
        timezone="Asia/Shanghai",
    )
    entry = join(wei, pool, tomorrow)
    mail.outbox.clear()
    with django_capture_on_commit_callbacks(execute=True):
        booking_cancel(actor=alice, booking=booking)  # offers in its own transaction
    entry.refresh_from_db()
    (note,) = Notification.objects.filter(user=wei)
    assert note.booking_id == entry.booking_id
    assert "为您保留" in note.body and "Asia/Shanghai" in note.body
    (message,) = [m for m in mail.outbox if wei.email in m.to]
    assert message.subject == note.subject and "空闲" in message.subject
    (delivery,) = ChatDelivery.objects.filter(channel=channel, event="waitlist_offer")
    assert "为您保留" in delivery.text and "上海" not in delivery.title
