"""What the booking rules read, loaded under the locks in as few statements as we can.

A create or an extend locks its pool row first (`SELECT … FOR UPDATE`): parallel writes to one pool
queue there, and under READ COMMITTED each later statement sees whatever the previous lock holder
committed. The rules (rules.py) and the slot choice (slots.py) then only read this snapshot.
The quota rows are locked only when a rule first asks for them (`BookingSnapshot.quota`), after the
pool's own rules passed, so a request the pool refuses never queues on the lab's quota.

Statements: the pool lock (with whether the lab may book it), one UNION of the blackouts and the
live reservations around the asked period, then, when a quota rule asks, the quota rows of the
months touched (locked, one statement) and each month's usage (quotas.selectors.quota_usage).
A member with personal limits adds their membership lock and their bookings.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from decimal import Decimal
from functools import cached_property

from django.utils.translation import gettext as _

from labgpu.accounts.models import Lab, Membership, User
from labgpu.bookings.models import Booking
from labgpu.bookings.services.slots import free_slot
from labgpu.budgets.models import Budget
from labgpu.budgets.selectors import (
    SECONDS_PER_HOUR,
    BudgetPeriod,
    SpendTally,
    budget_spend,
    budgets_lock,
    hourly_price,
    spend_tally,
)
from labgpu.catalog.models import InstanceType, NodePool
from labgpu.core.errors import ApplicationError
from labgpu.core.rows import JoinedRows, prepared_cursor
from labgpu.core.timeutils import month_bounds, month_start, next_month, overlap
from labgpu.quotas.models import Quota
from labgpu.quotas.selectors import QuotaUsage, UsageTally, quota_usage, quota_usage_tally

Period = tuple[datetime, datetime]
NO_SLOT = -1  # marks a blackout row in the UNION below
# One round trip for both, written once (compiling the two querysets and their UNION cost more
# CPU than the statement): blackouts overlapping the asked [start, end) carry NO_SLOT, live
# reservations overlapping the reserved period their slot. The live statuses are written into the
# statement, not passed: it is prepared (core.rows), and only with the list in its text can
# PostgreSQL's generic plan use the live bookings' partial index instead of every booking the
# pool ever had (EXPLAIN, plan_cache_mode = force_generic_plan).
_LIVE = ", ".join(f"'{status}'" for status in Booking.LIVE_STATUSES)
BLACKOUTS_AND_TAKEN_SQL = f"""
    SELECT start, "end", %(blackout)s, reason FROM catalog_blackout
     WHERE pool_id = %(pool)s AND start < %(end)s AND "end" > %(start)s
    UNION ALL
    SELECT reserved_start, reserved_end, slot::integer, '' FROM bookings_booking
     WHERE pool_id = %(pool)s::bigint AND status IN ({_LIVE})
       AND reserved_start < %(reserved_end)s AND reserved_end > %(reserved_start)s
       AND id <> %(exclude)s
"""  # noqa: S608 - only the model's status constants are formatted in; values are parameters
# The lab's quota rows of the months touched, locked in month order: parallel bookings of one lab
# queue here (I-2). Written once and prepared (core.rows): Quota.objects.raw() mapped its columns
# per call.
_QUOTA_LOCK = JoinedRows(
    [(Quota, "q")],
    f'FROM "{Quota._meta.db_table}" q '
    "WHERE q.lab_id = %s AND q.instance_type_id = %s AND q.month = ANY(%s) "
    "ORDER BY q.month FOR UPDATE",
    prepared=True,
)


@dataclass(frozen=True, slots=True)
class Ask:
    """What is asked: a new booking, an existing one (`booking`) with a later end, or an existing
    one not yet started moved to a new [start, end) (`booking` and `move`)."""

    user: User
    lab: Lab
    membership: Membership | None
    start: datetime
    end: datetime
    on_demand: bool
    moment: datetime
    booking: Booking | None = None
    move: bool = False
    cost_centre_id: int | None = None  # the cost centre it is booked to (its budget applies)

    @property
    def extension(self) -> bool:
        return self.booking is not None and not self.move

    @property
    def exclude_id(self) -> int | None:
        return self.booking.pk if self.booking else None

    @property
    def added_from(self) -> datetime:
        """Where the time this asks for begins. An extension adds only [old end, new end): limits
        per calendar period (quota months, a member's weeks) and blackouts are checked from there,
        since the time before was accepted already (and may since have been spent, lowered or
        closed for maintenance)."""
        return self.booking.end if self.extension else self.start  # type: ignore[union-attr]


@dataclass(frozen=True, slots=True)
class Blackout:
    start: datetime
    end: datetime
    reason: str


@dataclass(frozen=True, slots=True)
class MonthQuota:
    """A month the booking touches: its locked quota row (None: no hours at all) and its usage."""

    month: date
    quota: Quota | None
    usage: QuotaUsage | None


@dataclass
class BookingSnapshot:
    pool: NodePool  # locked, with its instance type and `restricted` / `lab_allowed`
    reserved: Period  # what the booking would hold: [start - lead, end + grace)
    blackouts: list[Blackout]  # overlapping [added_from, end)
    taken: list[tuple[int, datetime, datetime]]  # (slot, reserved start, end) of live bookings
    # Only for a member with personal limits: their own bookings, (start, end, status).
    member_bookings: list[tuple[datetime, datetime, str]] = field(default_factory=list)
    ask: Ask | None = None
    # A series' occurrence: the reads shared by all its occurrences (SeriesWindow).
    window: SeriesWindow | None = None

    @cached_property
    def quota(self) -> list[MonthQuota]:
        """Lock the lab's quota rows of every month the booking touches, then read their usage."""
        assert self.ask is not None
        if self.window is not None:
            return self.window.quota_months(self.ask)
        return quota_months_load(self.ask, self.pool)

    @property
    def lab_has_budget(self) -> bool:
        """The lab's `has_budget` as read under the lab's share lock with the pool's (pool_lock),
        not as the caller's Lab object had it (loaded before any lock)."""
        fresh = getattr(self.pool, "lab_has_budget", None)
        if fresh is not None:
            return bool(fresh)
        assert self.ask is not None
        return self.ask.lab.has_budget

    @cached_property
    def budgets(self) -> list[BudgetPeriod]:
        """Lock the lab's and the cost centre's budgets (after the quota rows: one lock order),
        then read each touched period's spend. Only for a lab with a budget (`Lab.has_budget`)."""
        assert self.ask is not None
        if self.window is not None:
            return self.window.budget_periods(self.ask)
        return budget_periods_load(self.ask, self.pool)


def months_touched(start: datetime, end: datetime) -> list[date]:
    months = [month_start(start)]
    while month_bounds(months[-1])[1] < end:
        months.append(next_month(months[-1]))
    return months


_ALLOWED = NodePool.allowed_labs.through._meta.db_table
# The pool row locked with its instance type, whether the lab (NULL: none asked) may book it, and
# the lab's `has_budget` read under a share lock on the lab row: budget_create and budget_delete
# lock that row for update before they change the flag or add a budget, so a booking either
# waits for them and sees their budget, or they wait for it (one lock order: pool, then lab).
# `FOR UPDATE OF p`: the instance type row stays free for other pools. Written out once
# (core.rows): the queryset's compilation cost more CPU than the statement, on every create.
_POOL_LOCK = JoinedRows(
    [(NodePool, "p"), (InstanceType, "it")],
    f'FROM "{NodePool._meta.db_table}" p '
    f'JOIN "{InstanceType._meta.db_table}" it ON it.id = p.instance_type_id '
    "WHERE p.id = %(pool)s FOR UPDATE OF p",
    extra=[
        f'EXISTS (SELECT 1 FROM "{_ALLOWED}" a WHERE a.nodepool_id = p.id)',  # noqa: S608
        f'EXISTS (SELECT 1 FROM "{_ALLOWED}" a WHERE a.nodepool_id = p.id AND a.lab_id = %(lab)s)',  # noqa: S608
        f'(SELECT l.has_budget FROM "{Lab._meta.db_table}" l WHERE l.id = %(lab)s FOR SHARE)',  # noqa: S608
    ],
    prepared=True,
)


def pool_lock(pool_id: int, *, lab_id: int | None = None) -> NodePool:
    """Lock the pool row; with `lab_id`, learn in the same statement whether that lab may book it
    (`restricted`: only its allowed labs may; `lab_allowed`: this lab is one) and whether it has
    a budget (`lab_has_budget`, read under the lab row's share lock; None without `lab_id`).

    The exclusion constraint on the bookings stays the last line of defence (I-1).
    """
    for pool, instance_type, restricted, lab_allowed, has_budget in _POOL_LOCK.fetch(
        {"pool": pool_id, "lab": lab_id}
    ):
        pool.instance_type = instance_type
        pool.restricted, pool.lab_allowed = restricted, lab_allowed
        pool.lab_has_budget = has_budget
        return pool
    raise ApplicationError(
        _('Invalid pk "%(pk)s" - object does not exist.') % {"pk": pool_id},
        code="does_not_exist",
        field="pool",
    )


def pools_lock(pool_ids: Iterable[int]) -> None:
    """Lock several pools, in id order: two transactions that each change bookings in several
    pools (a series cancel, a member's removal) then never hold one each while waiting for the
    other's."""
    for pool_id in sorted(set(pool_ids)):
        pool_lock(pool_id)


def reserved_period(pool: NodePool, ask: Ask) -> Period:
    """[start - provisioning lead, end + teardown grace); no lead on demand, none either for an
    extension (the booking keeps the reserved start it has; a moved one gets a new one)."""
    grace = timedelta(minutes=pool.teardown_grace_minutes)
    if ask.extension:
        assert ask.booking is not None
        return ask.booking.reserved_start, ask.end + grace
    lead = timedelta(0) if ask.on_demand else timedelta(minutes=pool.provisioning_lead_minutes)
    return ask.start - lead, ask.end + grace


def snapshot_load(ask: Ask, pool: NodePool) -> BookingSnapshot:
    """Everything but the quota (loaded when a rule first asks), for `ask` in the locked `pool`."""
    reserved = reserved_period(pool, ask)
    snap = BookingSnapshot(pool=pool, reserved=reserved, blackouts=[], taken=[], ask=ask)
    # An extension meets only the blackouts over the time it adds: one over the part already
    # accepted was left to the site admin (bookings/blackouts.py).
    snap.blackouts, snap.taken = _blackouts_and_taken(
        pool, (ask.added_from, ask.end), reserved, exclude_id=ask.exclude_id
    )
    if _has_limits(ask.membership):
        snap.member_bookings = member_bookings_load(ask)
    return snap


def _has_limits(membership: Membership | None) -> bool:
    return membership is not None and (
        membership.max_hours_per_week is not None or membership.max_concurrent_bookings is not None
    )


def _blackouts_and_taken(
    pool: NodePool, period: Period, reserved: Period, *, exclude_id: int | None = None
) -> tuple[list[Blackout], list[tuple[int, datetime, datetime]]]:
    """The blackouts overlapping `period` (by start) and the live reservations overlapping
    `reserved`, in one statement."""
    with prepared_cursor() as cursor:
        cursor.execute(
            BLACKOUTS_AND_TAKEN_SQL,
            {
                "pool": pool.pk,
                "start": period[0],
                "end": period[1],
                "reserved_start": reserved[0],
                "reserved_end": reserved[1],
                "exclude": exclude_id or 0,  # ids start at 1
                "blackout": NO_SLOT,
            },
        )
        rows = cursor.fetchall()
    blackouts, taken = [], []
    for start, end, slot, reason in rows:
        if slot == NO_SLOT:
            blackouts.append(Blackout(start, end, reason))
        else:
            taken.append((slot, start, end))
    blackouts.sort(key=lambda blackout: blackout.start)
    return blackouts, taken


# A week either side covers every week a member's limit looks at (weeks start on their Monday).
MEMBER_MARGIN = timedelta(days=8)


def member_bookings_load(
    ask: Ask, *, until: datetime | None = None
) -> list[tuple[datetime, datetime, str]]:
    """The member's live and completed bookings of this lab, their membership row locked first so
    parallel requests of one member queue (the limits hold under races). `until`: up to that end
    rather than the ask's (a series reads its whole span once)."""
    assert ask.membership is not None
    Membership.objects.select_for_update().filter(pk=ask.membership.pk).first()
    return list(
        Booking.objects.filter(
            user_id=ask.user.pk,
            lab_id=ask.lab.pk,
            status__in=[*Booking.LIVE_STATUSES, Booking.Status.COMPLETED],
            start__lt=(until or ask.end) + MEMBER_MARGIN,
            end__gt=ask.start - MEMBER_MARGIN,
        )
        .exclude(pk=ask.exclude_id)
        .values_list("start", "end", "status")
    )


class SeriesWindow:
    """What a series' occurrences read, read once for all of them (services/series.py).

    Each occurrence still gets a `BookingSnapshot` and goes through every rule; the snapshot is
    cut from reads over the series' whole span, made under the same locks in the same order as a
    single booking takes them (pool, the member's row, the quota months, the budgets), and every
    occurrence booked is `add`ed to them, so a later occurrence sees it exactly as a fresh read
    would (the rows are in the database too: the series holds the pool lock, so no one else
    writes this pool's reservations meanwhile). Quota months and budget periods are read when a
    rule first asks for them, already with every occurrence written before.
    """

    def __init__(self, asks: list[Ask], pool: NodePool) -> None:
        self.pool = pool
        first, last = asks[0], asks[-1]
        self.lab, self.cost_centre_id = first.lab, first.cost_centre_id
        self.reserved = (reserved_period(pool, first)[0], reserved_period(pool, last)[1])
        self.blackouts, self.taken = _blackouts_and_taken(
            pool, (first.start, last.end), self.reserved
        )
        self.member_bookings: list[tuple[datetime, datetime, str]] | None = None
        if _has_limits(first.membership):
            self.member_bookings = member_bookings_load(first, until=last.end)
        # Every quota month the series touches, in month order, before any budget row: one
        # booking locks quota(its months) then budgets, so locking December, a budget, then
        # January would deadlock against a January booking.
        self.months = months_touched(first.start, last.end)
        self.quotas = {
            quota.month: quota
            for (quota,) in _QUOTA_LOCK.fetch([self.lab.pk, pool.instance_type_id, self.months])
        }
        self.usage: dict[date, UsageTally] = {}
        self.budgets: list[Budget] | None = None
        self.spend: dict[tuple[int, datetime], SpendTally] = {}
        self.prices: dict[int, Decimal] = {}

    def snapshot(self, ask: Ask) -> BookingSnapshot:
        reserved = reserved_period(self.pool, ask)
        snap = BookingSnapshot(
            pool=self.pool,
            reserved=reserved,
            blackouts=[b for b in self.blackouts if b.start < ask.end and b.end > ask.start],
            taken=[t for t in self.taken if t[1] < reserved[1] and t[2] > reserved[0]],
            ask=ask,
            window=self,
        )
        if self.member_bookings is not None:
            since, until = ask.start - MEMBER_MARGIN, ask.end + MEMBER_MARGIN
            snap.member_bookings = [
                b for b in self.member_bookings if b[0] < until and b[1] > since
            ]
        return snap

    def quota_months(self, ask: Ask) -> list[MonthQuota]:
        loaded = []
        for month in months_touched(ask.start, ask.end):
            quota = self.quotas.get(month)
            usage = None
            if quota is not None:
                if month not in self.usage:
                    self.usage[month] = quota_usage_tally(
                        lab_id=self.lab.pk,
                        instance_type_id=self.pool.instance_type_id,
                        month=month,
                        quota=quota,
                    )
                usage = self.usage[month].usage()
            loaded.append(MonthQuota(month, quota, usage))
        return loaded

    def budget_periods(self, ask: Ask) -> list[BudgetPeriod]:
        if self.budgets is None:  # locked once, after the quota rows (one lock order)
            self.budgets = budgets_lock(lab_id=self.lab.pk, cost_centre_id=self.cost_centre_id)
        price = hourly_price(self.pool.instance_type, prices=self.prices)
        loaded = []
        for budget in self.budgets:
            for begin, end in budget.periods(ask.start, ask.end):
                key = (budget.pk, begin)
                if key not in self.spend:
                    self.spend[key] = spend_tally(budget, begin, end)
                inside = Decimal(overlap(ask.start, ask.end, begin, end).total_seconds())
                loaded.append(
                    BudgetPeriod(
                        budget=budget,
                        begin=begin,
                        end=end,
                        spend=self.spend[key].spend(self.prices),
                        needed=inside / SECONDS_PER_HOUR * price,
                    )
                )
        return loaded

    def add(self, booking: Booking, snap: BookingSnapshot) -> None:
        """`booking` (of `snap`'s ask) was written: count it in every read a later occurrence
        makes. A booking placed by repacking moved other rows' slots: the reservations are read
        again."""
        if free_slot(self.pool.capacity, snap.taken) is None:
            self.taken = _blackouts_and_taken(self.pool, self.reserved, self.reserved)[1]
        else:
            self.taken.append((booking.slot, booking.reserved_start, booking.reserved_end))
        if self.member_bookings is not None:
            self.member_bookings.append((booking.start, booking.end, booking.status))
        for tally in self.usage.values():
            tally.add(
                status=booking.status,
                gpu_count=booking.gpu_count,
                start=booking.start,
                end=booking.end,
            )
        for tally in self.spend.values():
            tally.add(
                status=booking.status,
                instance_type_id=self.pool.instance_type_id,
                start=booking.start,
                end=booking.end,
            )


def quota_months_load(ask: Ask, pool: NodePool) -> list[MonthQuota]:
    months = months_touched(ask.added_from, ask.end)
    locked = {
        quota.month: quota
        for (quota,) in _QUOTA_LOCK.fetch([ask.lab.pk, pool.instance_type_id, months])
    }
    loaded = []
    for month in months:
        quota = locked.get(month)
        usage = None
        if quota is not None:
            usage = quota_usage(
                lab_id=ask.lab.pk,
                instance_type_id=pool.instance_type_id,
                month=month,
                exclude_booking_id=ask.exclude_id,
                quota=quota,
            )
        loaded.append(MonthQuota(month, quota, usage))
    return loaded


def budget_periods_load(ask: Ask, pool: NodePool) -> list[BudgetPeriod]:
    """Each budget period [added_from, end) touches, with its spend without this booking and the
    booking's cost inside it at the hourly price (budgets.selectors defines the terms)."""
    loaded = []
    prices: dict = {}
    price = hourly_price(pool.instance_type, prices=prices)
    for budget in budgets_lock(lab_id=ask.lab.pk, cost_centre_id=ask.cost_centre_id):
        for begin, end in budget.periods(ask.added_from, ask.end):
            spend = budget_spend(
                budget, begin, end, exclude_booking_id=ask.exclude_id, prices=prices
            )
            inside = Decimal(overlap(ask.start, ask.end, begin, end).total_seconds())
            needed = inside / SECONDS_PER_HOUR * price
            loaded.append(
                BudgetPeriod(budget=budget, begin=begin, end=end, spend=spend, needed=needed)
            )
    return loaded
