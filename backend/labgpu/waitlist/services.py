"""The waitlist: join and leave, offers made from freed capacity, taken, declined or lapsed.

Fairness: first come, first served. Freed capacity of a pool goes to the waiting entries that can
use it in the order they joined (id order): an entry is passed over only when the freed time does
not fit its window or the rulebook refuses it (its lab's quota, budget, a member limit), and then
it keeps its place for the next free slot. Caps on *active* entries (waiting or offered) —
LABGPU_WAITLIST_MAX_PER_USER per member, LABGPU_WAITLIST_MAX_PER_LAB per lab — keep one person
from queueing for every pool at once and one lab from filling the queue ahead of the others.

An offer is a booking in status `offered` made by the one rulebook (`bookings.services.book`,
`hold=True`): it holds its slot under the live-slot exclusion constraint, so nobody else can book
the held capacity, and its hours count against the quota while it is open. Taking it schedules
that booking; declining it, leaving, or letting it lapse releases the slot, which is offered to
the next entry. With `auto_book` the entry's owner opted to be booked at once.

Concurrency: a promotion locks the pool row first (as every booking of the pool does: parallel
frees and bookings queue there), then each entry row it offers to (`FOR UPDATE`, in id order);
a model entry waited for in two pools is offered by whichever promotion locks it first, the other
finds it no longer waiting. Taking, declining and leaving lock the entry row. Promotions are
enqueued by the services that free capacity (through the outbox: bookings.services.capacity_freed)
and the sweep (every 30 s) re-runs them and ends lapsed offers, so a lost task delays an offer but
never loses one.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from django.conf import settings
from django.db import DatabaseError, IntegrityError, transaction
from django.db.models import Q
from django.utils.translation import gettext as _

from labgpu.accounts.models import Lab, Membership, User
from labgpu.audit.services import audit_record
from labgpu.bookings.models import Booking
from labgpu.bookings.selectors import next_free_windows
from labgpu.bookings.services import (
    Ask,
    book,
    booking_lab_resolve,
    booking_offer_release,
    booking_offer_take,
    pool_lock,
)
from labgpu.catalog.models import NodePool
from labgpu.core.errors import ApplicationError, Conflict, NotPermitted
from labgpu.core.outbox import enqueue_on_commit
from labgpu.core.timeutils import now
from labgpu.core.transitions import transition
from labgpu.waitlist import notifications
from labgpu.waitlist.models import WaitlistEntry

logger = logging.getLogger(__name__)
Status = WaitlistEntry.Status
PROMOTE_TASK = "labgpu.waitlist.tasks.promote_waitlist"
EXPIRE_TASK = "labgpu.waitlist.tasks.expire_offer"
# Entries one promotion looks at: the pool's first waiting entries in joining order.
PROMOTE_BATCH = 50
MAX_WINDOW_DAYS = 90


def _pools_for(*, pool: NodePool | None, gpu_model: str, lab: Lab) -> list[NodePool]:
    """The active pools the entry may be offered in that `lab` may book."""
    pools = NodePool.objects.filter(is_active=True).filter(
        Q(allowed_labs__isnull=True) | Q(allowed_labs=lab)
    )
    if pool is not None:
        pools = pools.filter(pk=pool.pk)
    else:
        pools = pools.filter(instance_type__gpu_model__iexact=gpu_model)
    return list(pools.distinct().order_by("id"))


def waitlist_join(
    *,
    user: User,
    earliest_start: datetime,
    latest_end: datetime,
    duration_minutes: int,
    pool: NodePool | None = None,
    gpu_model: str = "",
    lab: Lab | None = None,
    auto_book: bool = False,
    purpose: str = "",
) -> WaitlistEntry:
    """Queue `user` for `duration_minutes` inside [earliest_start, latest_end) in `pool` or any
    pool of `gpu_model`. Raises a field error for a bad window, `waitlist_user_cap` or
    `waitlist_lab_cap` (409) when a cap is reached. Capacity free already is offered at once."""
    gpu_model = gpu_model.strip()
    if (pool is None) == (not gpu_model):
        raise ApplicationError(
            _("Name either a pool or a GPU model."), code="pool_or_model", field="pool"
        )
    moment = now()
    if latest_end <= earliest_start:
        raise ApplicationError(
            _("The window must end after it starts."), code="end_before_start", field="latest_end"
        )
    if latest_end <= moment:
        raise ApplicationError(
            _("The window is over already."), code="window_past", field="latest_end"
        )
    if latest_end - max(earliest_start, moment) > timedelta(days=MAX_WINDOW_DAYS):
        raise ApplicationError(
            _("A waitlist window spans at most %(days)s days.") % {"days": MAX_WINDOW_DAYS},
            code="window_too_long",
            field="latest_end",
        )
    if duration_minutes < 1:
        raise ApplicationError(
            _("The duration must be at least one minute."),
            code="too_short",
            field="duration_minutes",
        )
    if timedelta(minutes=duration_minutes) > latest_end - max(earliest_start, moment):
        raise ApplicationError(
            _("The duration does not fit in the window."),
            code="duration_exceeds_window",
            field="duration_minutes",
        )
    lab, _membership = booking_lab_resolve(user, lab)
    pools = _pools_for(pool=pool, gpu_model=gpu_model, lab=lab)
    if not pools:
        if pool is not None:
            raise NotPermitted(
                _("%(lab)s may not book %(pool)s.") % {"lab": lab.name, "pool": pool.name},
                code="lab_not_allowed",
                field="pool",
            )
        raise ApplicationError(
            _("No pool of %(model)s is open to %(lab)s.") % {"model": gpu_model, "lab": lab.name},
            code="no_pool_of_model",
            field="gpu_model",
        )
    if pool is not None and duration_minutes % pool.granularity_minutes:
        raise ApplicationError(
            _("Bookings in %(pool)s last a multiple of %(grid)s minutes.")
            % {"pool": pool.name, "grid": pool.granularity_minutes},
            code="off_granularity",
            field="duration_minutes",
        )
    with transaction.atomic():
        # The lab's row serialises its members' joins: both caps are counted under it.
        Lab.objects.select_for_update().filter(pk=lab.pk).first()
        active = WaitlistEntry.objects.filter(status__in=WaitlistEntry.ACTIVE_STATUSES)
        user_cap = settings.LABGPU_WAITLIST_MAX_PER_USER
        if active.filter(user=user).count() >= user_cap:
            raise Conflict(
                _("You have %(limit)s active waitlist entries, the most allowed: leave one first.")
                % {"limit": user_cap},
                code="waitlist_user_cap",
                extra={"limit": user_cap},
            )
        lab_cap = settings.LABGPU_WAITLIST_MAX_PER_LAB
        if active.filter(lab=lab).count() >= lab_cap:
            raise Conflict(
                _("%(lab)s has %(limit)s active waitlist entries, the most allowed.")
                % {"lab": lab.name, "limit": lab_cap},
                code="waitlist_lab_cap",
                extra={"limit": lab_cap},
            )
        entry = WaitlistEntry.objects.create(
            user=user,
            lab=lab,
            pool=pool,
            gpu_model="" if pool is not None else gpu_model,
            earliest_start=earliest_start,
            latest_end=latest_end,
            duration_minutes=duration_minutes,
            auto_book=auto_book,
            purpose=purpose,
            status=Status.WAITING,
            status_changed_at=moment,
        )
        audit_record(
            actor=user,
            action="waitlist.join",
            target=entry,
            lab=lab,
            data={
                "pool": pool.slug if pool else None,
                "gpu_model": entry.gpu_model,
                "earliest_start": earliest_start.isoformat(),
                "latest_end": latest_end.isoformat(),
                "duration_minutes": duration_minutes,
                "auto_book": auto_book,
            },
        )
        # Room that is free already (or frees while this commits) is offered at once.
        for candidate in pools:
            enqueue_on_commit(PROMOTE_TASK, candidate.pk)
    return entry


def _lock_entry(entry: WaitlistEntry) -> WaitlistEntry:
    return (
        WaitlistEntry.objects.select_for_update(of=("self",))
        .select_related("booking")
        .get(pk=entry.pk)
    )


def _own(actor: User, entry: WaitlistEntry) -> None:
    if entry.user_id != actor.pk:
        raise NotPermitted(_("This waitlist entry is not yours."), code="not_your_entry")


def waitlist_leave(*, actor: User, entry: WaitlistEntry) -> WaitlistEntry:
    """Leave the waitlist; an open offer is released to the next entry."""
    _own(actor, entry)
    with transaction.atomic():
        entry = _lock_entry(entry)
        if entry.status not in WaitlistEntry.ACTIVE_STATUSES:
            raise Conflict(
                _("This entry is %(status)s already.") % {"status": entry.get_status_display()},
                code="invalid_status",
            )
        if entry.status == Status.OFFERED and entry.booking is not None:
            booking_offer_release(booking=entry.booking, reason="waitlist: left")
        _move(entry, Status.LEFT)
        audit_record(actor=actor, action="waitlist.leave", target=entry, lab=entry.lab)
    return entry


def waitlist_offer_accept(*, actor: User, entry: WaitlistEntry) -> WaitlistEntry:
    """Take the open offer: its held booking is scheduled (pending where the pool needs
    approval). Raises `offer_closed` or `offer_expired` (409) when there is none to take."""
    _own(actor, entry)
    with transaction.atomic():
        entry = _lock_entry(entry)
        if entry.status != Status.OFFERED or entry.booking is None:
            raise Conflict(_("This entry has no open offer."), code="offer_closed")
        if entry.offer_expires_at is not None and entry.offer_expires_at <= now():
            lapsed = True
        else:
            lapsed = False
            booking_offer_take(booking=entry.booking)
            _move(entry, Status.BOOKED)
            audit_record(
                actor=actor,
                action="waitlist.accept",
                target=entry,
                lab=entry.lab,
                data={"booking": entry.booking_id},
            )
    if lapsed:
        waitlist_offer_expire(entry_id=entry.pk)
        raise Conflict(_("The offer lapsed: it passed to the next in line."), code="offer_expired")
    return entry


def waitlist_offer_decline(*, actor: User, entry: WaitlistEntry) -> WaitlistEntry:
    """Turn the open offer down: its slot goes to the next entry, and this entry ends."""
    _own(actor, entry)
    with transaction.atomic():
        entry = _lock_entry(entry)
        if entry.status != Status.OFFERED or entry.booking is None:
            raise Conflict(_("This entry has no open offer."), code="offer_closed")
        booking_offer_release(booking=entry.booking, reason="waitlist: declined")
        _move(entry, Status.DECLINED)
        audit_record(actor=actor, action="waitlist.decline", target=entry, lab=entry.lab)
    return entry


def waitlist_offer_expire(*, entry_id: int) -> bool:
    """End the entry's offer if its time is up; its slot is offered to the next entry. Safe to
    run twice (the entry is locked and re-read; a taken or released offer is left alone)."""
    with transaction.atomic():
        entry = (
            WaitlistEntry.objects.select_for_update(skip_locked=True, of=("self",))
            .select_related("booking")
            .filter(pk=entry_id, status=Status.OFFERED, offer_expires_at__lte=now())
            .first()
        )
        if entry is None:
            return False
        if entry.booking is not None:
            booking_offer_release(booking=entry.booking, reason="waitlist: lapsed")
        _move(entry, Status.LAPSED)
        audit_record(actor=None, action="waitlist.lapse", target=entry, lab=entry.lab)
    return True


def _move(entry: WaitlistEntry, to_status: str, **fields: object) -> None:
    """Status change of a locked entry (the audit trail comes with `transition`)."""
    transition(
        WaitlistEntry,
        pk=entry.pk,
        from_statuses=[entry.status],
        to_status=to_status,
        **fields,
    )
    entry.status = to_status
    for name, value in fields.items():
        setattr(entry, name, value)


def _waiting_for(pool: NodePool, moment: datetime) -> list[int]:
    """Ids of the entries waiting for `pool` (by pool or by its GPU model), in joining order,
    locked in that order before any is offered.

    Two promotions of one GPU model in two pools each hold their own pool and book through the
    same lab's quota row: were the entries locked one by one between bookings, one could hold the
    quota row waiting for an entry the other holds while the other waits for the quota row (a
    deadlock PostgreSQL breaks by failing one). Locked all at once, in id order, the second
    promotion waits before it has booked anything."""
    model = pool.instance_type.gpu_model
    return list(
        WaitlistEntry.objects.filter(status=Status.WAITING, latest_end__gt=moment)
        .filter(Q(pool_id=pool.pk) | Q(pool__isnull=True, gpu_model__iexact=model))
        .order_by("id")
        .select_for_update(of=("self",))
        .values_list("pk", flat=True)[:PROMOTE_BATCH]
    )


def waitlist_promote(*, pool_id: int) -> list[int]:
    """Offer what is free in the pool to its waiting entries, first come first served; returns
    the ids of the entries offered (or booked). Safe to run twice or in parallel: the pool row
    lock serialises promotions of the pool with its bookings, the entry row locks (all taken
    before the first offer) a model entry's promotions in two pools."""
    made: list[int] = []
    with transaction.atomic():
        pool = pool_lock(pool_id)
        if not pool.is_active:
            return made
        moment = now()
        for entry_id in _waiting_for(pool, moment):
            entry = (
                WaitlistEntry.objects.select_for_update(of=("self",))
                .select_related("user", "lab")
                .filter(pk=entry_id, status=Status.WAITING)
                .first()
            )
            if entry is None:
                continue  # offered in another pool meanwhile, or left
            booking = _offer(entry, pool_id, moment)
            if booking is None:
                continue
            made.append(entry.pk)
            transaction.on_commit(lambda entry=entry: notifications.waitlist_offered(entry))
    return made


def promote_where_freed(sender: object, *, pool_id: int, **kwargs: object) -> None:
    """bookings.signals.capacity_freed's receiver: promote the pool's waitlist in the transaction
    that freed the slot, before its commit lets a direct booking take the time. A promotion that
    fails is rolled back to its savepoint (waitlist_promote's atomic block) and leaves the freeing
    as it is; the task enqueued beside the signal (or the sweep) promotes later."""
    if not WaitlistEntry.objects.filter(status=Status.WAITING).exists():
        return  # nobody waits anywhere (the usual case): one statement, no savepoint
    try:
        waitlist_promote(pool_id=pool_id)
    except DatabaseError:
        logger.exception("waitlist promotion of pool %s failed; the task will retry it", pool_id)


def _offer(entry: WaitlistEntry, pool_id: int, moment: datetime) -> Booking | None:
    """Book (or hold) the earliest time in the pool that fits the entry's window through the
    rulebook, in a savepoint; None when nothing fits or a rule refuses (the entry keeps its
    place)."""
    membership = Membership.objects.filter(user_id=entry.user_id, lab_id=entry.lab_id).first()
    if membership is None or not entry.lab.is_active or not entry.user.is_active:
        _move(entry, Status.CLOSED)  # left the lab, or the lab is archived: nothing to offer
        return None
    # The pool again, with whether the entry's lab may book it (the row is locked already).
    pool = pool_lock(pool_id, lab_id=entry.lab_id)
    if pool.restricted and not pool.lab_allowed:
        return None
    duration = timedelta(minutes=entry.duration_minutes)
    windows = next_free_windows(
        pool, duration=duration, after=max(entry.earliest_start, moment), count=1
    )
    if not windows or windows[0][0] + duration > entry.latest_end:
        return None
    start = windows[0][0]
    ask = Ask(
        user=entry.user,
        lab=entry.lab,
        membership=membership,
        start=start,
        end=start + duration,
        on_demand=False,
        moment=moment,
        cost_centre_id=membership.default_cost_centre_id,
    )
    try:
        with transaction.atomic():
            booking = book(ask, pool, purpose=entry.purpose, hold=not entry.auto_book)
    except ApplicationError as refusal:
        logger.info("waitlist entry %s not offered in pool %s: %s", entry.pk, pool_id, refusal.code)
        return None
    except IntegrityError as error:
        # The exclusion constraint caught what the lock should have: treat the pool as full.
        logger.warning("waitlist entry %s: %r", entry.pk, error)
        return None
    if entry.auto_book:
        _move(entry, Status.BOOKED, booking=booking, offered_at=moment)
        audit_record(
            actor=None,
            action="waitlist.book",
            target=entry,
            lab=entry.lab,
            data={"booking": booking.pk},
        )
    else:
        expires = moment + timedelta(minutes=pool.waitlist_hold_minutes)
        _move(entry, Status.OFFERED, booking=booking, offered_at=moment, offer_expires_at=expires)
        audit_record(
            actor=None,
            action="waitlist.offer",
            target=entry,
            lab=entry.lab,
            data={"booking": booking.pk, "expires": expires.isoformat()},
        )
        enqueue_on_commit(EXPIRE_TASK, entry.pk, countdown=pool.waitlist_hold_minutes * 60)
    entry.booking = booking
    return booking


def waitlist_sweep(*, batch: int = 200) -> dict[str, int]:
    """The backstop: lapse offers whose hold is over, close entries whose window can no longer
    fit, and promote every pool with waiting entries (a promotion a lost task missed)."""
    moment = now()
    lapsed = sum(
        waitlist_offer_expire(entry_id=pk)
        for pk in WaitlistEntry.objects.filter(
            status=Status.OFFERED, offer_expires_at__lte=moment
        ).values_list("pk", flat=True)[:batch]
    )
    closed = 0
    for pk, latest_end, minutes in WaitlistEntry.objects.filter(status=Status.WAITING).values_list(
        "pk", "latest_end", "duration_minutes"
    )[: batch * 5]:
        if latest_end - timedelta(minutes=minutes) < moment:
            closed += transition(
                WaitlistEntry, pk=pk, from_statuses=[Status.WAITING], to_status=Status.CLOSED
            )
    waiting = WaitlistEntry.objects.filter(status=Status.WAITING)
    pool_ids = set(waiting.exclude(pool=None).values_list("pool_id", flat=True).distinct())
    models = set(waiting.filter(pool=None).values_list("gpu_model", flat=True).distinct())
    if models:
        query = Q()
        for model in models:
            query |= Q(instance_type__gpu_model__iexact=model)
        pool_ids |= set(NodePool.objects.filter(query, is_active=True).values_list("pk", flat=True))
    promoted = sum(len(waitlist_promote(pool_id=pk)) for pk in sorted(pool_ids))
    return {"lapsed": lapsed, "closed": closed, "promoted": promoted}
