"""Create, extend, move and cancel bookings. Every rule is checked (rules.py) over a snapshot loaded
under the pool lock (snapshot.py), inside the transaction that writes; the booking, its audit entry
and its idempotency key commit together."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils.translation import gettext as _

from labgpu.accounts.models import Lab, Membership, User
from labgpu.accounts.selectors import is_lab_admin
from labgpu.audit.models import AuditEvent
from labgpu.audit.services import audit_entry, audit_record
from labgpu.bookings import notifications, signals
from labgpu.bookings.models import Booking, BookingSeries, IdempotencyKey
from labgpu.bookings.selectors import booking_changeable_by
from labgpu.bookings.services.idempotency import idempotent_replay
from labgpu.bookings.services.quota_alerts import quota_alerts_send
from labgpu.bookings.services.rules import (
    budget_alerts_due,
    check_all,
    crosses_quota_alert,
    needs_approval,
)
from labgpu.bookings.services.slots import place, pool_full
from labgpu.bookings.services.snapshot import Ask, BookingSnapshot, pool_lock, snapshot_load
from labgpu.budgets.services import budget_alerts_record, cost_centre_of_lab
from labgpu.catalog.models import NodePool
from labgpu.core.errors import ApplicationError, Conflict, NotPermitted
from labgpu.core.outbox import enqueue_on_commit
from labgpu.core.rows import JoinedRows
from labgpu.core.timeutils import now
from labgpu.core.transitions import transition
from labgpu.inserts import RowInsert

EXCLUSION_VIOLATION = "23P01"  # PostgreSQL: booking_live_slot_no_overlap refused the row
# A start inside the current minute means "now": the booking is on demand and provisions at once.
ON_DEMAND_TOLERANCE = timedelta(seconds=60)
START_BOOKING_TASK = "labgpu.provisioning.tasks.start_booking"
WIND_DOWN_TASK = "labgpu.provisioning.tasks.wind_down_booking"
# Freed capacity goes to the pool's waitlist (labgpu.waitlist, a higher app: enqueued by name).
WAITLIST_PROMOTE_TASK = "labgpu.waitlist.tasks.promote_waitlist"
Status = Booking.Status
EXTENDABLE = (Status.PENDING, Status.SCHEDULED, Status.PROVISIONING, Status.READY)
MOVABLE = (Status.PENDING, Status.SCHEDULED)  # not started: no node holds the old times yet
# Columns a booking's row lock re-reads: what a parallel writer may have changed.
LOCKED_FIELDS = ["status", "start", "end", "pending_end", "reserved_start", "reserved_end", "slot"]


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
    jupyter: bool = False,
    cost_centre: int | None = None,
) -> tuple[Booking, bool]:
    """Reserve a node of `pool` for [start, end); returns (booking, created).

    The booking carries `cost_centre` (an id of the lab's), else the member's default. With an
    `idempotency_key` a retried request returns the booking the first one made. Raises
    `PoolFull` (409, with the next free windows), `quota_exceeded`, `budget_exceeded`, or a rule
    error.
    """
    pool_id = pool if isinstance(pool, int) else pool.pk
    if idempotency_key:
        replay = idempotent_replay(user, idempotency_key, request_fingerprint)
        if replay:
            return replay, False
    try:
        with transaction.atomic():
            booking = _booking_create(
                user=user,
                pool_id=pool_id,
                start=start,
                end=end,
                purpose=purpose,
                lab=lab,
                jupyter=jupyter,
                cost_centre=cost_centre,
            )
            if idempotency_key:
                _IDEMPOTENCY_KEY_INSERT.create(
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
            replay = idempotent_replay(user, idempotency_key, request_fingerprint)
            if replay:
                return replay, False
        if getattr(error.__cause__, "sqlstate", None) != EXCLUSION_VIOLATION:
            raise
        start = start or now()
        raise pool_full(
            NodePool.objects.get(pk=pool_id), duration=end - start, after=start
        ) from error
    return booking, True


def _resolve_lab(user: User, lab: Lab | None) -> tuple[Lab, Membership]:
    """The lab `user` books for (`lab`, or their only one) and their membership; raises the
    booking create's errors for a lab they are not in, or one archived."""
    resolved, membership = _member_lab(user, lab)
    if not resolved.is_active:
        raise NotPermitted(
            _("This lab is archived: it books nothing new."), code="lab_archived", field="lab"
        )
    return resolved, membership


# `Membership.objects.filter(user=…).select_related("lab")`, written out once (core.rows): every
# create asks it, and its compilation cost more CPU than the statement.
_MEMBERSHIPS_WITH_LAB = JoinedRows(
    [(Membership, "m"), (Lab, "l")],
    f'FROM "{Membership._meta.db_table}" m JOIN "{Lab._meta.db_table}" l ON l.id = m.lab_id '
    "WHERE m.user_id = %s ORDER BY m.id",
    prepared=True,
)


# Booking.objects.create / IdempotencyKey.objects.create, the INSERT compiled once (core.rows).
_BOOKING_INSERT = RowInsert(Booking, prepared=True)
_IDEMPOTENCY_KEY_INSERT = RowInsert(IdempotencyKey, prepared=True)


def _member_lab(user: User, lab: Lab | None) -> tuple[Lab, Membership]:
    memberships = []
    for membership, member_lab in _MEMBERSHIPS_WITH_LAB.fetch([user.pk]):
        membership.lab = member_lab
        memberships.append(membership)
    if lab is None:
        if len(memberships) == 1:
            return memberships[0].lab, memberships[0]
        if not memberships:
            raise NotPermitted(
                _("You are not a member of any lab."), code="not_a_member", field="lab"
            )
        raise ApplicationError(
            _("You are in several labs: say which one books."), code="lab_required", field="lab"
        )
    for membership in memberships:
        if membership.lab_id == lab.pk:
            return lab, membership
    # No name: whoever is not a member must not learn what a lab id is called (issue 11 item 12).
    raise NotPermitted(_("You are not a member of this lab."), code="not_a_member", field="lab")


def _booking_create(
    *,
    user: User,
    pool_id: int,
    start: datetime | None,
    end: datetime,
    purpose: str,
    lab: Lab | None,
    jupyter: bool = False,
    cost_centre: int | None = None,
) -> Booking:
    moment = now()
    on_demand = start is None or abs(start - moment) < ON_DEMAND_TOLERANCE
    if on_demand:
        start = moment.replace(microsecond=0)
    assert start is not None
    lab, membership = _resolve_lab(user, lab)
    if cost_centre is None:
        cost_centre = membership.default_cost_centre_id
    else:
        cost_centre = cost_centre_of_lab(lab_id=lab.pk, cost_centre_id=cost_centre)
    pool = pool_lock(pool_id, lab_id=lab.pk)
    ask = Ask(
        user=user,
        lab=lab,
        membership=membership,
        start=start,
        end=end,
        on_demand=on_demand,
        moment=moment,
        cost_centre_id=cost_centre,
    )
    return book(ask, pool, purpose=purpose, jupyter=jupyter)


def book(
    ask: Ask,
    pool: NodePool,
    *,
    purpose: str,
    jupyter: bool = False,
    series: BookingSeries | None = None,
    hold: bool = False,
    snap: BookingSnapshot | None = None,
    audit_into: list[AuditEvent] | None = None,
) -> Booking:
    """Check every rule for `ask` in the locked `pool` and write the booking (with its audit
    entry, alerts and start), in the caller's transaction. The one way a new booking is made:
    a single create, each occurrence of a series (services/series.py) and a waitlist's offer or
    automatic booking (labgpu.waitlist) come here.

    With `hold` the booking is `offered`: it holds its slot (and counts against the quota) like
    any live booking, but nothing starts until its owner takes it (`booking_offer_take`).

    The row is written before this returns, so the next ask checked in the same transaction
    (a series' next occurrence) sees it in every read of the snapshot and the quota. `snap`: the
    snapshot already cut for `ask` (a series' SeriesWindow), else it is loaded here. A refusal
    is raised by the rules, before anything is written. `audit_into`: the audit entry is added
    to that list for the caller to write with the others (audit_record_all), not written here.
    """
    start, end, lab, user, moment = ask.start, ask.end, ask.lab, ask.user, ask.moment
    if snap is None:
        snap = snapshot_load(ask, pool)
    check_all(ask, snap)
    instance_type = pool.instance_type
    booking = _BOOKING_INSERT.create(
        lab=lab,
        user=user,
        pool=pool,
        start=start,
        end=end,
        purpose=purpose,
        status=(
            Status.OFFERED
            if hold
            else Status.PENDING
            if needs_approval(ask, snap)
            else Status.SCHEDULED
        ),
        status_changed_at=moment,
        on_demand=ask.on_demand,
        slot=place(pool, snap.taken, snap.reserved),
        reserved_start=snap.reserved[0],
        reserved_end=snap.reserved[1],
        gpu_count=instance_type.gpu_count,
        price_per_hour=instance_type.price_per_hour,
        jupyter=jupyter,
        series=series,
        cost_centre_id=ask.cost_centre_id,
    )
    if crosses_quota_alert(ask, snap):
        transaction.on_commit(lambda: quota_alerts_send(booking=booking))
    budget_alerts_record(lab=lab, due=budget_alerts_due(ask, snap))
    if booking.status == Status.PENDING and series is None:
        # A series asks its lab admins once, for all its occurrences (services/series.py).
        transaction.on_commit(lambda: notifications.booking_approval_needed(booking))
    data = {
        "status": booking.status,
        "start": start.isoformat(),
        "end": end.isoformat(),
        "pool": pool.slug,
    }
    if series is not None:
        data["series"] = series.pk
    if audit_into is None:
        audit_record(actor=user, action="booking.create", target=booking, lab=lab, data=data)
    else:
        audit_into.append(
            audit_entry(actor=user, action="booking.create", target=booking, lab=lab, data=data)
        )
    _start_if_due(booking)
    return booking


def _start_if_due(booking: Booking) -> None:
    """A booking whose provisioning is due already starts once it commits, not at the next sweep
    (the sweep stays the backstop)."""
    if booking.status == Status.SCHEDULED and booking.reserved_start <= now():
        enqueue_on_commit(START_BOOKING_TASK, booking.pk)


def capacity_freed(pool_id: int) -> None:
    """A live booking of the pool let its slot go (or will at this commit): its waitlist is
    offered what freed, once the transaction commits (the outbox keeps the request through a
    broker outage; the waitlist's sweep is the backstop).

    The freeing transaction holds the pool's lock, taken before the booking's row (pool_lock,
    as create takes them): a promotion walking the line under that lock must not see a slot
    freed midway, or a later entry takes it past an earlier one.

    The waitlist promotes at once, in this transaction (bookings.signals.capacity_freed): the
    freed time is offered before anyone else can see it free. The task stays as the backstop for
    a promotion that failed here (it finds nothing left to do otherwise)."""
    enqueue_on_commit(WAITLIST_PROMOTE_TASK, pool_id)
    signals.capacity_freed.send(sender=Booking, pool_id=pool_id)


def booking_offer_take(*, booking: Booking) -> Booking:
    """An `offered` booking is taken by its owner: it is scheduled (pending where the pool needs
    approval), in the caller's transaction; it kept its slot all along, so no rule is asked again.
    Raises Conflict when it is no longer offered."""
    pool = NodePool.objects.only("requires_approval").get(pk=booking.pool_id)
    to_status = Status.PENDING if pool.requires_approval else Status.SCHEDULED
    if not transition(Booking, pk=booking.pk, from_statuses=[Status.OFFERED], to_status=to_status):
        raise Conflict(_("This offer is no longer open."), code="offer_closed")
    booking.refresh_from_db(fields=["status", "status_changed_at", "updated_at"])
    if booking.status == Status.PENDING:
        transaction.on_commit(lambda: notifications.booking_approval_needed(booking))
    audit_record(
        actor=booking.user,
        action="booking.offer_take",
        target=booking,
        lab=booking.lab,
        data={"status": booking.status},
    )
    _start_if_due(booking)
    return booking


@transaction.atomic
def booking_offer_release(*, booking: Booking, reason: str) -> bool:
    """An `offered` booking not taken (declined, lapsed, its entry left) lets its slot go;
    returns whether this caller released it.

    Under the pool's lock, as booking_cancel: a promotion holding it sees the slot either held
    or free for its whole walk down the line, never freed midway (when an earlier entry would be
    judged against it taken and a later one against it free). The callers hold the entry's lock
    first; no promotion waits on that entry while holding this pool (an offered entry is not
    listed as waiting), so the order cannot close a cycle."""
    pool_lock(booking.pool_id)
    released = transition(
        Booking,
        pk=booking.pk,
        from_statuses=[Status.OFFERED],
        to_status=Status.EXPIRED,
        ended_at=now(),
        end_reason=reason[:300],
    )
    if released:
        capacity_freed(booking.pool_id)
    return released


def booking_lock(booking: Booking) -> None:
    """Lock the booking's row and re-read what a parallel writer may have changed."""
    booking.refresh_from_db(
        fields=LOCKED_FIELDS, from_queryset=Booking.objects.select_for_update(of=("self",))
    )


def may_decide(actor: User, booking: Booking) -> bool:
    """Whether `actor` may approve `booking`: its lab's admins and site admins, but not the one
    who asked unless LABGPU_ALLOW_SELF_APPROVAL (approval is a second pair of eyes)."""
    own = booking.user_id == actor.pk
    return is_lab_admin(actor, booking.lab_id) and (not own or settings.LABGPU_ALLOW_SELF_APPROVAL)


def extension_ask(booking: Booking, end: datetime) -> Ask:
    membership = Membership.objects.filter(user_id=booking.user_id, lab_id=booking.lab_id).first()
    return Ask(
        user=booking.user,
        lab=booking.lab,
        membership=membership,
        start=booking.start,
        end=end,
        on_demand=booking.on_demand,
        moment=now(),
        booking=booking,
        cost_centre_id=booking.cost_centre_id,
    )


@transaction.atomic
def booking_extend(*, actor: User, booking: Booking, end: datetime) -> Booking:
    """Move the end later while capacity, quota and the pool's rules allow.

    In a pool that requires approval, an approved booking's extension is a request: the booking
    keeps its approved end, holds its slot up to the asked end (`pending_end`), and a lab admin
    approves or rejects the extension (`booking_approve` / `booking_reject`). The quota is checked
    now and again, under its lock, when the extension is approved. A booking still pending moves
    its end at once (its approval is still to come); a lab admin who may approve it extends it
    directly.
    """
    if not booking_changeable_by(actor, booking):
        raise NotPermitted(_("You cannot change this booking."), code="not_your_booking")
    pool = pool_lock(booking.pool_id, lab_id=booking.lab_id)
    booking_lock(booking)
    if booking.status not in EXTENDABLE:
        raise Conflict(
            _("This booking is %(status)s: it cannot be extended.")
            % {"status": booking.get_status_display()},
            code="invalid_status",
        )
    ask = extension_ask(booking, end)
    snap = snapshot_load(ask, pool)
    check_all(ask, snap)
    booking.slot = place(pool, snap.taken, snap.reserved, exclude_id=booking.pk)
    booking.reserved_end = snap.reserved[1]
    old_end = booking.end
    data = {"from": old_end.isoformat(), "to": end.isoformat()}
    if (
        booking.status != Status.PENDING
        and needs_approval(ask, snap)
        and not may_decide(actor, booking)
    ):
        booking.pending_end = end
        action = "booking.extension_request"
    else:
        booking.end, booking.pending_end = end, None
        action = "booking.extend"
        if crosses_quota_alert(ask, snap):
            transaction.on_commit(lambda: quota_alerts_send(booking=booking))
        budget_alerts_record(lab=booking.lab, due=budget_alerts_due(ask, snap))
    booking.save(update_fields=["end", "pending_end", "reserved_end", "slot", "updated_at"])
    audit_record(actor=actor, action=action, target=booking, lab=booking.lab, data=data)
    return booking


@transaction.atomic
def booking_move(*, actor: User, booking: Booking, start: datetime, end: datetime) -> Booking:
    """Move a booking not yet started to [start, end) in its pool, through every booking rule
    (the booking itself excluded: it does not clash with its old times).

    In a pool that requires approval the booking is (again) pending unless the mover may approve
    it; a pending one stays pending. Its owner is told when someone else moved it.
    """
    if not booking_changeable_by(actor, booking):
        raise NotPermitted(_("You cannot move this booking."), code="not_your_booking")
    pool = pool_lock(booking.pool_id, lab_id=booking.lab_id)
    booking_lock(booking)
    if booking.status not in MOVABLE:
        raise Conflict(
            _("This booking is %(status)s: it cannot be moved.")
            % {"status": booking.get_status_display()},
            code="invalid_status",
        )
    if booking.pending_end is not None:
        raise Conflict(
            _("This booking has an extension waiting for approval: decide it first."),
            code="extension_pending",
        )
    membership = Membership.objects.filter(user_id=booking.user_id, lab_id=booking.lab_id).first()
    ask = Ask(
        user=booking.user,
        lab=booking.lab,
        membership=membership,
        start=start,
        end=end,
        on_demand=False,
        moment=now(),
        booking=booking,
        move=True,
        cost_centre_id=booking.cost_centre_id,
    )
    snap = snapshot_load(ask, pool)
    check_all(ask, snap)
    old_start, old_end = booking.start, booking.end
    if (
        booking.status == Status.SCHEDULED
        and needs_approval(ask, snap)
        and not may_decide(actor, booking)
    ):
        # New times are a new request: whoever approved the old ones has not seen these.
        transition(
            Booking, pk=booking.pk, from_statuses=[Status.SCHEDULED], to_status=Status.PENDING
        )
        booking.refresh_from_db(fields=["status", "status_changed_at"])
    booking.start, booking.end = start, end
    booking.reserved_start, booking.reserved_end = snap.reserved
    booking.slot = place(pool, snap.taken, snap.reserved, exclude_id=booking.pk)
    booking.save(
        update_fields=["start", "end", "reserved_start", "reserved_end", "slot", "updated_at"]
    )
    if crosses_quota_alert(ask, snap):
        transaction.on_commit(lambda: quota_alerts_send(booking=booking))
    budget_alerts_record(lab=booking.lab, due=budget_alerts_due(ask, snap))
    audit_record(
        actor=actor,
        action="booking.move",
        target=booking,
        lab=booking.lab,
        data={
            "from": {"start": old_start.isoformat(), "end": old_end.isoformat()},
            "to": {"start": start.isoformat(), "end": end.isoformat()},
            "status": booking.status,
        },
    )
    if booking.user_id != actor.pk:
        transaction.on_commit(
            lambda: notifications.booking_moved(booking, old_start=old_start, old_end=old_end)
        )
    _start_if_due(booking)
    return booking


@transaction.atomic
def booking_cancel(*, actor: User, booking: Booking, reason: str = "") -> Booking:
    """Cancel before the start or end early; a site admin doing it for others force-ends."""
    if not booking_changeable_by(actor, booking):
        raise NotPermitted(_("You cannot cancel this booking."), code="not_your_booking")
    # The pool first, then the booking's row (the transition), in the order create, extend, move
    # and the waitlist's promotion take them: a promotion walking the line under this lock must
    # not see the slot freed halfway through its walk, or a later entry takes it past an earlier.
    pool_lock(booking.pool_id)
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
        booking.refresh_from_db(fields=["status"])
        if booking.status == Status.OFFERED:
            raise Conflict(
                _("This booking is an offer from the waitlist: decline the offer instead."),
                code="invalid_status",
            )
        raise Conflict(
            _("This booking is %(status)s: it cannot be cancelled.")
            % {"status": booking.get_status_display()},
            code="invalid_status",
        )
    # Re-read only what the transition wrote: the caller's lab, user, pool and nodes stay loaded.
    booking.refresh_from_db(fields=["status", "status_changed_at", "updated_at", "ended_at"])
    if booking.status == Status.CANCELLED:
        # Not started: the slot is free now. An early end frees it once the node is gone
        # (provisioning's booking_complete_if_done).
        capacity_freed(booking.pool_id)
    booking.ended_by = actor
    audit_record(
        actor=actor,
        action=action,
        target=booking,
        lab=booking.lab,
        data={"reason": reason, "status": booking.status},
    )
    return booking
