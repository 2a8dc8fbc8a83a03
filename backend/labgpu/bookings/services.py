"""Writes about bookings. Every rule is checked inside the transaction that writes (I-1, I-2)."""

import hashlib
import json
import zoneinfo
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.db.models import Exists, OuterRef

from labgpu.accounts.models import Lab, Membership, User
from labgpu.accounts.selectors import is_lab_admin
from labgpu.audit.services import audit_record
from labgpu.bookings import notifications
from labgpu.bookings.models import Booking, IdempotencyKey
from labgpu.bookings.selectors import (
    booking_changeable_by,
    next_free_windows,
    peak_usage,
    reserved_period_for,
)
from labgpu.catalog.models import Blackout, NodePool
from labgpu.core.errors import ApplicationError, Conflict, NotPermitted
from labgpu.core.outbox import enqueue_on_commit
from labgpu.core.timeutils import is_aligned, now
from labgpu.core.transitions import transition
from labgpu.quotas.services import quota_check_and_lock, quota_notify_thresholds

EXCLUSION_VIOLATION = "23P01"  # PostgreSQL: booking_live_slot_no_overlap refused the row
# A start inside the current minute means "now": the booking is on demand and provisions at once.
ON_DEMAND_TOLERANCE = timedelta(seconds=60)
Status = Booking.Status


class PoolFull(Conflict):
    default_code = "pool_full"


def _windows_payload(windows: list[tuple[datetime, datetime]]) -> list[dict[str, str]]:
    return [{"start": start.isoformat(), "end": end.isoformat()} for start, end in windows]


def _pool_full(pool: NodePool, duration: timedelta, after: datetime, exclude_id: int | None = None):
    windows = next_free_windows(pool, duration=duration, after=after, exclude_id=exclude_id)
    return PoolFull(
        f"{pool.name} is fully booked for that time.",
        extra={"next_free": _windows_payload(windows)},
    )


def _lock_pool(pool_id: int, *, lab_id: int | None = None) -> NodePool:
    """Lock the pool row; with `lab_id`, also learn in the same query whether that lab may book.

    Serialises booking writes per pool on PostgreSQL (`of=self`: the instance type row stays
    free for other pools); SQLite's IMMEDIATE transaction already holds the write lock. The
    exclusion constraint stays the last line of defence.
    """
    pools = NodePool.objects.select_for_update(of=("self",)).select_related("instance_type")
    if lab_id is not None:
        allowed = NodePool.allowed_labs.through.objects.filter(nodepool_id=OuterRef("pk"))
        pools = pools.annotate(
            restricted=Exists(allowed), lab_allowed=Exists(allowed.filter(lab_id=lab_id))
        )
    try:
        return pools.get(pk=pool_id)
    except NodePool.DoesNotExist:
        raise ApplicationError(
            f'Invalid pk "{pool_id}" - object does not exist.',
            code="does_not_exist",
            field="pool",
        ) from None


def _resolve_lab(user: User, lab: Lab | None) -> tuple[Lab, Membership]:
    memberships = list(Membership.objects.filter(user=user).select_related("lab"))
    if lab is None:
        if len(memberships) == 1:
            return memberships[0].lab, memberships[0]
        if not memberships:
            raise NotPermitted("You are not a member of any lab.", code="not_a_member", field="lab")
        raise ApplicationError(
            "You are in several labs: say which one books.", code="lab_required", field="lab"
        )
    for membership in memberships:
        if membership.lab_id == lab.pk:
            return lab, membership
    # No name: whoever is not a member must not learn what a lab id is called (issue 11 item 12).
    raise NotPermitted("You are not a member of this lab.", code="not_a_member", field="lab")


def _check_times(*, pool: NodePool, start: datetime, end: datetime, on_demand: bool) -> None:
    moment = now()
    grid = pool.granularity_minutes
    if end <= start:
        raise ApplicationError(
            "The end must be after the start.", code="end_before_start", field="end"
        )
    if not on_demand and start < moment:
        raise ApplicationError("The start is in the past.", code="start_in_past", field="start")
    if not on_demand and not is_aligned(start, grid):
        raise ApplicationError(
            f"Bookings in {pool.name} start on a {grid}-minute grid.",
            code="off_granularity",
            field="start",
        )
    if not is_aligned(end, grid):
        raise ApplicationError(
            f"Bookings in {pool.name} end on a {grid}-minute grid.",
            code="off_granularity",
            field="end",
        )
    minutes = (end - start).total_seconds() / 60
    if minutes < pool.min_duration_minutes:
        raise ApplicationError(
            f"Bookings in {pool.name} last at least {pool.min_duration_minutes} minutes.",
            code="too_short",
            field="end",
        )
    if minutes > pool.max_duration_minutes:
        raise ApplicationError(
            f"Bookings in {pool.name} last at most {pool.max_duration_minutes} minutes.",
            code="too_long",
            field="end",
        )
    if start > moment + timedelta(days=pool.max_days_ahead):
        raise ApplicationError(
            f"{pool.name} takes bookings at most {pool.max_days_ahead} days ahead.",
            code="too_far_ahead",
            field="start",
        )
    blackout = Blackout.objects.filter(pool=pool, start__lt=end, end__gt=start).first()
    if blackout:
        raise ApplicationError(
            f"{pool.name} is closed for maintenance from {blackout.start.isoformat()} "
            f"to {blackout.end.isoformat()}.",
            code="blackout",
            field="start",
            extra={
                "blackout": {
                    "start": blackout.start.isoformat(),
                    "end": blackout.end.isoformat(),
                    "reason": blackout.reason,
                }
            },
        )


def _week_bounds(moment: datetime, tz: zoneinfo.ZoneInfo) -> tuple[datetime, datetime]:
    local = moment.astimezone(tz)
    monday = (local - timedelta(days=local.weekday())).replace(
        hour=0, minute=0, second=0, microsecond=0
    )
    return monday, monday + timedelta(days=7)


def _check_member_limits(
    *, membership: Membership, user: User, start: datetime, end: datetime, exclude_id: int | None
) -> None:
    """Per-member limits; the locked membership row makes parallel requests queue."""
    if membership.max_hours_per_week is None and membership.max_concurrent_bookings is None:
        return
    Membership.objects.select_for_update().filter(pk=membership.pk).first()
    mine = Booking.objects.filter(
        user=user,
        lab_id=membership.lab_id,
        status__in=[*Booking.LIVE_STATUSES, Status.COMPLETED],
    ).exclude(pk=exclude_id)
    if membership.max_concurrent_bookings is not None:
        overlapping = mine.filter(status__in=Booking.LIVE_STATUSES, start__lt=end, end__gt=start)
        if overlapping.count() >= membership.max_concurrent_bookings:
            raise Conflict(
                f"Your lab allows you {membership.max_concurrent_bookings} bookings at a time.",
                code="member_concurrency_exceeded",
                extra={"limit": membership.max_concurrent_bookings},
            )
    if membership.max_hours_per_week is not None:
        tz = zoneinfo.ZoneInfo(user.timezone or "UTC")
        week_start, week_end = _week_bounds(start, tz)
        limit = timedelta(hours=membership.max_hours_per_week)
        while week_start < end:
            new = min(end, week_end) - max(start, week_start)
            existing = sum(
                (
                    min(b_end, week_end) - max(b_start, week_start)
                    for b_start, b_end in mine.filter(
                        start__lt=week_end, end__gt=week_start
                    ).values_list("start", "end")
                ),
                timedelta(0),
            )
            if existing + new > limit:
                left = max(limit - existing, timedelta(0)).total_seconds() / 3600
                raise Conflict(
                    f"Your lab allows you {membership.max_hours_per_week} hours per week; "
                    f"{left:g} left in the week of {week_start.date().isoformat()}.",
                    code="member_hours_exceeded",
                    extra={"limit_hours": membership.max_hours_per_week, "remaining_hours": left},
                )
            week_start, week_end = week_end, week_end + timedelta(days=7)


def _allocate_slot(
    pool: NodePool, reserved: tuple[datetime, datetime], exclude_id: int | None = None
) -> int | None:
    """A slot free over the whole reserved period, repacking slots if the pool is fragmented."""
    rs, re = reserved
    rows = Booking.objects.filter(
        pool=pool, status__in=Booking.LIVE_STATUSES, reserved_start__lt=re, reserved_end__gt=rs
    ).exclude(pk=exclude_id)
    overlapping = list(rows.values_list("slot", "reserved_start", "reserved_end"))
    taken = {slot for slot, _, _ in overlapping}
    for slot in range(pool.capacity):
        if slot not in taken:
            return slot
    if peak_usage([(s, e) for _, s, e in overlapping], rs, re) >= pool.capacity:
        return None
    return _repack_slots(pool, reserved, exclude_id)


def _repack_slots(
    pool: NodePool, reserved: tuple[datetime, datetime], exclude_id: int | None
) -> int | None:
    """Re-colour every current and future reservation so the new one fits.

    Capacity exists at every instant but no single slot is free throughout (fragmentation).
    Greedy colouring in start order uses no more slots than the peak overlap (interval graphs are
    perfect), so this always succeeds when the peak is below capacity.
    """
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SET CONSTRAINTS booking_live_slot_no_overlap DEFERRED")
    rows = list(
        Booking.objects.filter(
            pool=pool, status__in=Booking.LIVE_STATUSES, reserved_end__gt=min(reserved[0], now())
        )
        .exclude(pk=exclude_id)
        .values_list("pk", "slot", "reserved_start", "reserved_end")
    )
    items = [(rs, re, pk, slot) for pk, slot, rs, re in rows] + [(*reserved, None, None)]
    items.sort(key=lambda item: (item[0], item[2] or 0))
    slot_free_at: list[datetime | None] = [None] * pool.capacity
    new_slot = None
    for rs, re, pk, old_slot in items:
        slot = next(
            (i for i, free_at in enumerate(slot_free_at) if free_at is None or free_at <= rs), None
        )
        if slot is None:
            return None
        slot_free_at[slot] = re
        if pk is None:
            new_slot = slot
        elif slot != old_slot:
            Booking.objects.filter(pk=pk).update(slot=slot)
    return new_slot


def idempotency_fingerprint(payload: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()


def booking_create(
    *,
    user: User,
    pool: NodePool | int,
    end: datetime,
    start: datetime | None = None,
    purpose: str = "",
    lab: Lab | None = None,
    idempotency_key: str | None = None,
    request_fingerprint: str = "",
) -> tuple[Booking, bool]:
    """Reserve a node of `pool` for [start, end); returns (booking, created).

    With an `idempotency_key` a retried request returns the booking the first one made. Raises
    `PoolFull` (409, with the next free windows), `quota_exceeded`, or a rule error.
    """
    pool_id = pool if isinstance(pool, int) else pool.pk
    if idempotency_key:
        replay = _idempotent_replay(user, idempotency_key, request_fingerprint)
        if replay:
            return replay, False
    try:
        with transaction.atomic():
            booking = _booking_create(
                user=user, pool_id=pool_id, start=start, end=end, purpose=purpose, lab=lab
            )
            if idempotency_key:
                IdempotencyKey.objects.create(
                    user=user,
                    key=idempotency_key,
                    request_fingerprint=request_fingerprint,
                    booking=booking,
                )
    except IntegrityError as error:
        # Another request with the same key committed first, or the exclusion constraint caught
        # a race the pool lock should have prevented; both are answered without a 500. Any other
        # integrity error is a bug and must surface as one.
        if idempotency_key:
            replay = _idempotent_replay(user, idempotency_key, request_fingerprint)
            if replay:
                return replay, False
        if getattr(error.__cause__, "sqlstate", None) != EXCLUSION_VIOLATION:
            raise
        raise _pool_full(
            NodePool.objects.get(pk=pool_id), end - (start or now()), start or now()
        ) from error
    return booking, True


def _idempotent_replay(user: User, key: str, fingerprint: str) -> Booking | None:
    record = IdempotencyKey.objects.filter(user=user, key=key).select_related("booking").first()
    if record is None:
        return None
    if record.request_fingerprint != fingerprint:
        raise ApplicationError(
            "This Idempotency-Key was used with a different request.",
            code="idempotency_key_reused",
            status_code=422,
        )
    return record.booking


def _booking_create(
    *,
    user: User,
    pool_id: int,
    start: datetime | None,
    end: datetime,
    purpose: str,
    lab: Lab | None,
) -> Booking:
    moment = now()
    on_demand = start is None or abs(start - moment) < ON_DEMAND_TOLERANCE
    if on_demand:
        start = moment.replace(microsecond=0)
    assert start is not None
    lab, membership = _resolve_lab(user, lab)
    pool = _lock_pool(pool_id, lab_id=lab.pk)
    if not pool.is_active:
        raise ApplicationError(f"{pool.name} is closed.", code="pool_inactive", field="pool")
    if pool.restricted and not pool.lab_allowed:
        if not NodePool.allowed_labs.through.objects.filter(
            nodepool_id=pool.pk, lab__memberships__user=user
        ).exists():
            # Closed to every lab of this user: to them the pool does not exist (I-6).
            raise ApplicationError(
                f'Invalid pk "{pool.pk}" - object does not exist.',
                code="does_not_exist",
                field="pool",
            )
        raise NotPermitted(
            f"{lab.name} may not book {pool.name}.", code="lab_not_allowed", field="pool"
        )
    _check_times(pool=pool, start=start, end=end, on_demand=on_demand)
    _check_member_limits(membership=membership, user=user, start=start, end=end, exclude_id=None)
    reserved = reserved_period_for(pool, start, end, on_demand=on_demand)
    slot = _allocate_slot(pool, reserved)
    if slot is None:
        raise _pool_full(pool, end - start, start)
    instance_type = pool.instance_type
    booking = Booking(
        lab=lab,
        user=user,
        pool=pool,
        start=start,
        end=end,
        purpose=purpose,
        status=Status.PENDING if pool.requires_approval else Status.SCHEDULED,
        status_changed_at=moment,
        on_demand=on_demand,
        slot=slot,
        reserved_start=reserved[0],
        reserved_end=reserved[1],
        gpu_count=instance_type.gpu_count,
        price_per_hour=instance_type.price_per_hour,
    )
    crosses_alert = quota_check_and_lock(booking=booking)
    booking.save()
    if crosses_alert:  # decided under the quota lock: the common path pays nothing extra
        transaction.on_commit(lambda: quota_notify_thresholds(booking=booking))
    audit_record(
        actor=user,
        action="booking.create",
        target=booking,
        lab=lab,
        data={
            "status": booking.status,
            "start": start.isoformat(),
            "end": end.isoformat(),
            "pool": pool.slug,
        },
    )
    _start_if_due(booking)
    return booking


START_BOOKING_TASK = "labgpu.provisioning.tasks.start_booking"
WIND_DOWN_TASK = "labgpu.provisioning.tasks.wind_down_booking"


def _start_if_due(booking: Booking) -> None:
    """A booking whose provisioning is due already starts once it commits, not at the next sweep
    (the sweep stays the backstop)."""
    if booking.status == Status.SCHEDULED and booking.reserved_start <= now():
        enqueue_on_commit(START_BOOKING_TASK, booking.pk)


@transaction.atomic
def booking_extend(*, actor: User, booking: Booking, end: datetime) -> Booking:
    """Move the end later while capacity, quota and the pool's rules allow."""
    if not booking_changeable_by(actor, booking):
        raise NotPermitted("You cannot change this booking.", code="not_your_booking")
    pool = _lock_pool(booking.pool_id)
    booking = Booking.objects.select_for_update().get(pk=booking.pk)
    if booking.status not in (Status.PENDING, Status.SCHEDULED, Status.PROVISIONING, Status.READY):
        raise Conflict(f"A {booking.status} booking cannot be extended.", code="invalid_status")
    if end <= booking.end:
        raise ApplicationError(
            "The new end must be later than the current one.", code="end_not_later", field="end"
        )
    _check_times(pool=pool, start=booking.start, end=end, on_demand=True)
    membership = Membership.objects.filter(user=booking.user, lab=booking.lab).first()
    if membership:
        _check_member_limits(
            membership=membership,
            user=booking.user,
            start=booking.start,
            end=end,
            exclude_id=booking.pk,
        )
    old_end = booking.end
    reserved = (booking.reserved_start, end + timedelta(minutes=pool.teardown_grace_minutes))
    slot = _allocate_slot(pool, reserved, exclude_id=booking.pk)
    if slot is None:
        raise Conflict(
            f"{pool.name} is booked right after your booking.",
            code="pool_full",
            extra={
                "next_free": _windows_payload(
                    next_free_windows(
                        pool, duration=end - old_end, after=old_end, exclude_id=booking.pk
                    )
                )
            },
        )
    booking.end, booking.reserved_end, booking.slot = end, reserved[1], slot
    quota_check_and_lock(booking=booking, exclude_booking_id=booking.pk)
    booking.save(update_fields=["end", "reserved_end", "slot", "updated_at"])
    audit_record(
        actor=actor,
        action="booking.extend",
        target=booking,
        lab=booking.lab,
        data={"from": old_end.isoformat(), "to": end.isoformat()},
    )
    return booking


@transaction.atomic
def booking_cancel(*, actor: User, booking: Booking, reason: str = "") -> Booking:
    """Cancel before the start or end early; a site admin doing it for others force-ends."""
    if not booking_changeable_by(actor, booking):
        raise NotPermitted("You cannot cancel this booking.", code="not_your_booking")
    moment = now()
    forced = actor.is_site_admin and booking.user_id != actor.pk
    if transition(
        Booking,
        pk=booking.pk,
        from_statuses=[Status.PENDING, Status.SCHEDULED],
        to_status=Status.CANCELLED,
        ended_by=actor,
        ended_at=moment,
    ):
        action = "booking.force_end" if forced else "booking.cancel"
    elif transition(
        Booking,
        pk=booking.pk,
        from_statuses=[Status.PROVISIONING, Status.READY],
        to_status=Status.ENDING,
        ended_by=actor,
        ended_at=moment,
    ):
        # The node exists: the lifecycle tears it down (now, not at the next sweep) and meters
        # what was used.
        action = "booking.force_end" if forced else "booking.end_early"
        enqueue_on_commit(WIND_DOWN_TASK, booking.pk)
    else:
        booking.refresh_from_db()
        raise Conflict(f"A {booking.status} booking cannot be cancelled.", code="invalid_status")
    booking.refresh_from_db()
    audit_record(
        actor=actor,
        action=action,
        target=booking,
        lab=booking.lab,
        data={"reason": reason, "status": booking.status},
    )
    return booking


def _decide(*, actor: User, booking: Booking, to_status: str, reason: str) -> Booking:
    if not is_lab_admin(actor, booking.lab_id):
        raise NotPermitted("Only this lab's admins decide its bookings.", code="not_lab_admin")
    won = transition(
        Booking,
        pk=booking.pk,
        from_statuses=[Status.PENDING],
        to_status=to_status,
        decided_by=actor,
        decided_at=now(),
        decision_reason=reason,
    )
    booking.refresh_from_db()
    if not won:
        raise Conflict(f"This booking is {booking.status}, not pending.", code="already_decided")
    return booking


@transaction.atomic
def booking_approve(*, actor: User, booking: Booking, reason: str = "") -> Booking:
    if booking.status == Status.PENDING and booking.reserved_start <= now():
        booking_expire(booking_id=booking.pk)
        raise Conflict("Too late: the booking expired.", code="expired")
    own = booking.user_id == actor.pk
    if own and not settings.LABGPU_ALLOW_SELF_APPROVAL:
        # Approval is a second pair of eyes on the lab's money; the one who asked is not it.
        raise NotPermitted(
            "You cannot approve your own booking: another lab admin or a site admin decides it.",
            code="self_approval",
        )
    booking = _decide(actor=actor, booking=booking, to_status=Status.SCHEDULED, reason=reason)
    audit_record(
        actor=actor,
        action="booking.self_approve" if own else "booking.approve",
        target=booking,
        lab=booking.lab,
        data={"reason": reason, "self_approval": own},
    )
    transaction.on_commit(lambda: notifications.booking_decided(booking))
    return booking


@transaction.atomic
def booking_reject(*, actor: User, booking: Booking, reason: str) -> Booking:
    if not reason.strip():
        raise ApplicationError("Say why you reject it.", code="reason_required", field="reason")
    booking = _decide(actor=actor, booking=booking, to_status=Status.REJECTED, reason=reason)
    audit_record(
        actor=actor,
        action="booking.reject",
        target=booking,
        lab=booking.lab,
        data={"reason": reason},
    )
    transaction.on_commit(lambda: notifications.booking_decided(booking))
    return booking


def booking_expire(*, booking_id: int) -> bool:
    """Expire a pending booking nobody decided before its provisioning had to begin."""
    won = transition(
        Booking, pk=booking_id, from_statuses=[Status.PENDING], to_status=Status.EXPIRED
    )
    if won:
        booking = Booking.objects.select_related("lab").get(pk=booking_id)
        audit_record(actor=None, action="booking.expire", target=booking, lab=booking.lab)
    return won


def bookings_expire_stale_pending(*, batch: int = 200) -> int:
    """Expire up to `batch` stale pending bookings; returns how many were expired."""
    stale = Booking.objects.filter(status=Status.PENDING, reserved_start__lte=now()).values_list(
        "pk", flat=True
    )[:batch]
    return sum(booking_expire(booking_id=pk) for pk in stale)


def idempotency_keys_purge(*, batch: int = 1000) -> int:
    """Forget up to `batch` Idempotency-Keys older than LABGPU_IDEMPOTENCY_TTL_HOURS.

    A retry within the TTL still replays; afterwards the same key books anew (as Stripe's do).
    """
    cutoff = now() - timedelta(hours=settings.LABGPU_IDEMPOTENCY_TTL_HOURS)
    stale = list(
        IdempotencyKey.objects.filter(created_at__lt=cutoff)
        .order_by("created_at")
        .values_list("pk", flat=True)[:batch]
    )
    deleted, _ = IdempotencyKey.objects.filter(pk__in=stale).delete()
    return deleted
