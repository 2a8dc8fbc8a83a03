"""Recurring series: one request books many occurrences, each through the one rulebook.

How a series is checked as one request (the seam other rules rely on):

- The series takes the pool lock once and books its occurrences in start order inside ONE
  transaction, each through `changes.book` — the same `rules.check_all` over a `BookingSnapshot`,
  and the same insert, that a single booking goes through. There is no second rule path.
- The rules' reads are made once for the whole series (snapshot.SeriesWindow: the pool's
  reservations and blackouts over the series' span, the member's bookings, each quota month's
  usage and each budget period's spend, under the locks a single booking takes, in its order),
  and each occurrence gets a `BookingSnapshot` cut from them. An accepted occurrence's row is
  INSERTED and `add`ed to those reads before the next occurrence is checked, so occurrences
  accepted earlier count against capacity, member limits, the quota and the budget of later ones
  exactly as committed bookings do (a test compares each snapshot with a fresh `snapshot_load`).
  A rule added later that needs new data loads it in `snapshot_load` and, for a series, in
  SeriesWindow (or reads the database: the earlier occurrences' rows are there).
- A refused occurrence is refused by the rules before anything is written, so it leaves nothing
  behind and the others go on ("book what fits") without a savepoint each. With
  `all_or_nothing` every occurrence is still checked, so the answer lists each refusal, and then
  the whole transaction is rolled back. The occurrences' audit entries are written in one INSERT.

Edits: one occurrence is an ordinary booking (move, extend, cancel); `series_cancel` and
`series_move` act on an occurrence and the ones after it. A series in a pool that requires approval
is decided once (`series_decide`): all its pending occurrences, one audit entry for the series.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils.translation import gettext as _

from labgpu.accounts.models import Lab, User
from labgpu.audit.models import AuditEvent
from labgpu.audit.services import audit_record, audit_record_all
from labgpu.bookings import notifications
from labgpu.bookings.models import Booking, BookingSeries
from labgpu.bookings.recurrence import WEEKDAYS, Recurrence, local_instant, occurrences, zone_of
from labgpu.bookings.selectors import booking_changeable_by
from labgpu.bookings.services.changes import (
    MOVABLE,
    _resolve_lab,
    book,
    booking_cancel,
    booking_move,
    capacity_freed,
)
from labgpu.bookings.services.decisions import _check_lab_admin, _check_not_own
from labgpu.bookings.services.snapshot import Ask, SeriesWindow, pool_lock, pools_lock
from labgpu.budgets.services import cost_centre_of_lab
from labgpu.core.errors import ApplicationError, Conflict, NotPermitted
from labgpu.core.timeutils import now
from labgpu.core.transitions import transition

Status = Booking.Status


@dataclass(frozen=True)
class Occurrence:
    """One occurrence of a series as the answer lists it: booked (`booking`) or refused (`code`,
    `message`: the rule's own)."""

    start: datetime
    end: datetime
    booking: Booking | None = None
    code: str = ""
    message: str = ""


@dataclass(frozen=True)
class SeriesResult:
    series: BookingSeries
    occurrences: list[Occurrence]
    created: bool = True


def _refusal(start: datetime, end: datetime, error: ApplicationError) -> Occurrence:
    # Only the code and message: PoolFull's next free windows are read lazily (its `extra`) and
    # 52 refused occurrences must not search for 52 windows.
    return Occurrence(start, end, code=error.code, message=error.message)


def _replay(user: User, key: str, fingerprint: str) -> SeriesResult | None:
    series = BookingSeries.objects.filter(user=user, idempotency_key=key).first()
    if series is None:
        return None
    if series.created_at < now() - timedelta(hours=settings.LABGPU_IDEMPOTENCY_TTL_HOURS):
        # Forgotten, as booking keys are after the TTL: the same key books anew.
        BookingSeries.objects.filter(pk=series.pk).update(idempotency_key="")
        return None
    if series.request_fingerprint != fingerprint:
        raise ApplicationError(
            _("This Idempotency-Key was used with a different request."),
            code="idempotency_key_reused",
            status_code=422,
        )
    return SeriesResult(series, series_occurrences(series), created=False)


def series_occurrences(series: BookingSeries) -> list[Occurrence]:
    """The series' occurrences as now: its bookings (whatever their status) and the ones the
    rules refused when it was made, in start order."""
    booked = [
        Occurrence(b.start, b.end, booking=b)
        for b in series.bookings.select_related("lab", "user", "pool").order_by("start", "id")
    ]
    refused = [
        Occurrence(
            datetime.fromisoformat(r["start"]),
            datetime.fromisoformat(r["end"]),
            code=r["code"],
            message=r["message"],
        )
        for r in series.refused
    ]
    return sorted(booked + refused, key=lambda o: o.start)


def series_create(
    *,
    user: User,
    pool: int,
    start: datetime,
    end: datetime,
    recurrence: Recurrence,
    purpose: str = "",
    lab: Lab | None = None,
    jupyter: bool = False,
    all_or_nothing: bool = False,
    idempotency_key: str | None = None,
    request_fingerprint: str = "",
    cost_centre: int | None = None,
) -> SeriesResult:
    """Book every occurrence of `recurrence` whose first is [start, end); see the module
    docstring. Raises `series_refused` (409, every occurrence listed) when nothing is booked, or
    when `all_or_nothing` and any occurrence is refused; then nothing is written."""
    if end <= start:
        raise ApplicationError(
            _("The end must be after the start."), code="end_before_start", field="end"
        )
    planned = occurrences(recurrence, first_start=start, duration=end - start)
    if not planned:
        raise ApplicationError(
            _("This rule has no occurrence: every one is an exception."),
            code="no_occurrences",
            field="exceptions",
        )
    if idempotency_key:
        replay = _replay(user, idempotency_key, request_fingerprint)
        if replay:
            return replay
    try:
        with transaction.atomic():
            result = _series_create(
                user=user,
                pool_id=pool,
                planned=planned,
                recurrence=recurrence,
                duration=end - start,
                purpose=purpose,
                lab=lab,
                jupyter=jupyter,
                all_or_nothing=all_or_nothing,
                cost_centre=cost_centre,
                key=idempotency_key or "",
                fingerprint=request_fingerprint if idempotency_key else "",
            )
    except IntegrityError:
        # Another request with the same key committed first: answer with its series.
        if idempotency_key:
            replay = _replay(user, idempotency_key, request_fingerprint)
            if replay:
                return replay
        raise
    return result


class SeriesRefused(Conflict):
    default_code = "series_refused"

    def __init__(self, message: str, *, outcomes: list[Occurrence]) -> None:
        super().__init__(message)
        self.outcomes = outcomes
        self.extra = {"occurrences": [occurrence_payload(o) for o in outcomes]}


def occurrence_payload(o: Occurrence) -> dict:
    return {
        "start": o.start.isoformat(),
        "end": o.end.isoformat(),
        "booking": o.booking.pk if o.booking else None,
        "status": o.booking.status if o.booking else ("refused" if o.code else "not_booked"),
        "code": o.code,
        "message": o.message,
    }


def _series_create(
    *,
    user: User,
    pool_id: int,
    planned: list[tuple[datetime, datetime]],
    recurrence: Recurrence,
    duration: timedelta,
    purpose: str,
    lab: Lab | None,
    jupyter: bool,
    all_or_nothing: bool,
    cost_centre: int | None,
    key: str,
    fingerprint: str,
) -> SeriesResult:
    moment = now()
    lab, membership = _resolve_lab(user, lab)
    if cost_centre is None:
        cost_centre = membership.default_cost_centre_id if membership else None
    else:
        cost_centre = cost_centre_of_lab(lab_id=lab.pk, cost_centre_id=cost_centre)
    pool = pool_lock(pool_id, lab_id=lab.pk)  # once: the series queues behind, and ahead of, all
    asks = [
        Ask(
            user=user,
            lab=lab,
            membership=membership,
            start=start,
            end=end,
            on_demand=False,
            moment=moment,
            # The one asked for, else the member's default: its budget, and the lab's, see each.
            cost_centre_id=cost_centre,
        )
        for start, end in planned
    ]
    window = SeriesWindow(asks, pool)  # the member's row and every quota month, locked
    series = BookingSeries.objects.create(
        lab=lab,
        user=user,
        pool=pool,
        frequency=recurrence.frequency,
        interval=recurrence.interval,
        weekdays=list(recurrence.weekdays),
        month_day=recurrence.month_day,
        timezone=recurrence.timezone,
        first_start=planned[0][0],
        duration_minutes=int(duration.total_seconds() // 60),
        count=recurrence.count,
        until=recurrence.until,
        exceptions=sorted(d.isoformat() for d in recurrence.exceptions),
        purpose=purpose,
        all_or_nothing=all_or_nothing,
        idempotency_key=key,
        request_fingerprint=fingerprint,
    )
    outcomes: list[Occurrence] = []
    entries: list[AuditEvent] = []  # each occurrence's booking.create, written in one INSERT
    for ask in asks:
        snap = window.snapshot(ask)
        try:
            # No savepoint: a refusal is raised by the rules, before anything is written.
            booking = book(
                ask,
                pool,
                purpose=purpose,
                jupyter=jupyter,
                series=series,
                snap=snap,
                audit_into=entries,
            )
        except ApplicationError as error:
            outcomes.append(_refusal(ask.start, ask.end, error))
        else:
            window.add(booking, snap)
            outcomes.append(Occurrence(ask.start, ask.end, booking=booking))
    booked = [o.booking for o in outcomes if o.booking is not None]
    refused = [o for o in outcomes if o.booking is None]
    if not booked or (all_or_nothing and refused):
        message = (
            _("No occurrence of the series could be booked.")
            if not booked
            else _("%(refused)s of %(total)s occurrences cannot be booked, so none was.")
            % {"refused": len(refused), "total": len(outcomes)}
        )
        # Raised inside the atomic block: everything written above is rolled back.
        raise SeriesRefused(message, outcomes=[_unbooked(o) for o in outcomes])
    audit_record_all(entries)
    series.refused = [
        {
            "start": o.start.isoformat(),
            "end": o.end.isoformat(),
            "code": o.code,
            "message": o.message,
        }
        for o in refused
    ]
    series.save(update_fields=["refused", "updated_at"])
    audit_record(
        actor=user,
        action="series.create",
        target=series,
        lab=lab,
        data={
            "pool": pool.slug,
            "frequency": recurrence.frequency,
            "booked": [b.pk for b in booked],
            "refused": [{"start": o.start.isoformat(), "code": o.code} for o in refused],
        },
    )
    pending = [b for b in booked if b.status == Status.PENDING]
    if pending:
        transaction.on_commit(lambda: notifications.series_approval_needed(series, pending))
    return SeriesResult(series, outcomes)


def _unbooked(o: Occurrence) -> Occurrence:
    """An occurrence as the refusal answer lists it: what the rules said, no booking (none was
    kept). One that passed is listed as bookable (code empty)."""
    return Occurrence(o.start, o.end, code=o.code, message=o.message)


def _following(series: BookingSeries, from_booking: Booking | None) -> list[Booking]:
    occurrences = Booking.objects.filter(series=series).select_related("lab", "user", "pool")
    if from_booking is not None:
        if from_booking.series_id != series.pk:
            raise ApplicationError(
                _("That booking is not an occurrence of this series."),
                code="not_in_series",
                field="from_booking",
            )
        occurrences = occurrences.filter(start__gte=from_booking.start)
    return list(occurrences.order_by("start", "id"))


def series_cancel(
    *, actor: User, series: BookingSeries, from_booking: Booking | None = None, reason: str = ""
) -> list[Booking]:
    """Cancel `from_booking` and every later occurrence (without it: every occurrence not yet
    started). Each through `booking_cancel` (a running one ends early); returns those changed."""
    _check_may_change(actor, series)
    changed = []
    with transaction.atomic():
        following = _following(series, from_booking)
        pools_lock(booking.pool_id for booking in following)  # before booking_cancel takes each
        for booking in following:
            if from_booking is None and booking.status not in MOVABLE:
                continue  # cancelling "the series" leaves the one running alone
            if booking.status not in (*MOVABLE, Status.PROVISIONING, Status.READY):
                continue
            changed.append(booking_cancel(actor=actor, booking=booking, reason=reason))
        audit_record(
            actor=actor,
            action="series.cancel",
            target=series,
            lab=series.lab,
            data={
                "from": from_booking.pk if from_booking else None,
                "cancelled": [b.pk for b in changed],
                "reason": reason,
            },
        )
    return changed


def series_move(
    *,
    actor: User,
    series: BookingSeries,
    from_booking: Booking,
    shift_minutes: int = 0,
    duration_minutes: int | None = None,
) -> list[Occurrence]:
    """Move `from_booking` and every later occurrence not yet started by `shift_minutes` on the
    series' wall clock (so DST keeps the local time) and/or give them a new length. Each through
    `booking_move` (every rule again); an occurrence the rules refuse keeps its times and is
    listed with the reason."""
    _check_may_change(actor, series)
    tz = zone_of(series.timezone)
    outcomes = []
    with transaction.atomic():
        moved = []
        for booking in _following(series, from_booking):
            if booking.status not in MOVABLE:
                continue
            wall = booking.start.astimezone(tz).replace(tzinfo=None)
            start = local_instant(wall + timedelta(minutes=shift_minutes), tz)
            length = timedelta(minutes=duration_minutes) if duration_minutes else booking.duration
            try:
                with transaction.atomic():
                    done = booking_move(
                        actor=actor, booking=booking, start=start, end=start + length
                    )
            except ApplicationError as error:
                outcomes.append(
                    Occurrence(
                        start,
                        start + length,
                        booking=booking,
                        code=error.code,
                        message=error.message,
                    )
                )
            else:
                moved.append(done.pk)
                outcomes.append(Occurrence(done.start, done.end, booking=done))
        audit_record(
            actor=actor,
            action="series.move",
            target=series,
            lab=series.lab,
            data={
                "from": from_booking.pk,
                "shift_minutes": shift_minutes,
                "duration_minutes": duration_minutes,
                "moved": moved,
            },
        )
    return outcomes


def _check_may_change(actor: User, series: BookingSeries) -> None:
    probe = Booking(user_id=series.user_id, lab_id=series.lab_id)
    if not booking_changeable_by(actor, probe):
        raise NotPermitted(_("You cannot change this series."), code="not_your_booking")


@dataclass(frozen=True)
class SeriesDecision:
    approved: list[int]
    rejected: list[int]
    expired: list[int]


@transaction.atomic
def series_decide(
    *, actor: User, series: BookingSeries, approve: bool, reason: str = ""
) -> SeriesDecision:
    """Approve (or reject) every pending occurrence of the series at once: one decision by a lab
    admin of its lab (not the one who asked, unless LABGPU_ALLOW_SELF_APPROVAL), one audit entry
    for the series, one message to the booker. An occurrence whose provisioning had to begin
    already expires instead, as a single pending booking does."""
    probe = Booking(user_id=series.user_id, lab_id=series.lab_id)
    _check_lab_admin(actor, probe)
    if approve:
        _check_not_own(actor, probe)
    elif not reason.strip():
        raise ApplicationError(_("Say why you reject it."), code="reason_required", field="reason")
    moment = now()
    pool_lock(series.pool_id)  # before the occurrences' rows: a rejection frees their slots
    pending = list(
        Booking.objects.select_for_update(of=("self",))
        .filter(series=series, status=Status.PENDING)
        .order_by("start")
        .values_list("pk", "reserved_start")
    )
    if not pending:
        raise Conflict(
            _("No occurrence of this series waits for a decision."), code="already_decided"
        )
    decided, expired = [], []
    for pk, reserved_start in pending:
        if reserved_start <= moment:
            if transition(Booking, pk=pk, from_statuses=[Status.PENDING], to_status=Status.EXPIRED):
                expired.append(pk)
            continue
        if transition(
            Booking,
            pk=pk,
            from_statuses=[Status.PENDING],
            to_status=Status.SCHEDULED if approve else Status.REJECTED,
            decided_by=actor,
            decided_at=moment,
            decision_reason=reason,
        ):
            decided.append(pk)
    if expired or not approve:
        capacity_freed(series.pool_id)
    own = series.user_id == actor.pk
    audit_record(
        actor=actor,
        action=("series.self_approve" if own else "series.approve") if approve else "series.reject",
        target=series,
        lab=series.lab,
        data={
            "reason": reason,
            "decided": decided,
            "expired": expired,
            "refused_at_creation": len(series.refused),
        },
    )
    transaction.on_commit(
        lambda: notifications.series_decided(series, approved=approve, count=len(decided))
    )
    if approve:
        return SeriesDecision(approved=decided, rejected=[], expired=expired)
    return SeriesDecision(approved=[], rejected=decided, expired=expired)


def recurrence_of(
    *,
    frequency: str,
    timezone: str,
    interval: int = 1,
    weekdays: list[str] | None = None,
    month_day: int | None = None,
    count: int | None = None,
    until: date | None = None,
    exceptions: list[date] | None = None,
) -> Recurrence:
    unknown = [day for day in weekdays or [] if day not in WEEKDAYS]
    if unknown:
        raise ApplicationError(
            _("Weekdays are MO, TU, WE, TH, FR, SA, SU."), code="invalid", field="weekdays"
        )
    return Recurrence(
        frequency=frequency,
        timezone=timezone,
        interval=interval,
        weekdays=tuple(sorted(set(weekdays or []), key=WEEKDAYS.index)),
        month_day=month_day,
        count=count,
        until=until,
        exceptions=frozenset(exceptions or []),
    )
