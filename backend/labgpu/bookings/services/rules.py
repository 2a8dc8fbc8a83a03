"""The booking rules, each written once, used by create and by extend.

A rule is a function `check_…(ask, snap)` that reads only the request (`Ask`) and the snapshot
loaded under the locks (`BookingSnapshot`, snapshot.py) and raises an `ApplicationError` with a
stable code when the request breaks it. `RULES` runs them in order; the first broken one answers.

Adding a rule: write its function here, add it to `RULES`, and add a test to
bookings/tests/test_booking_rules.py (both create and extend go through it). If it needs data the
snapshot does not hold yet, load it in snapshot.py's `snapshot_load`, in the statements already
there when you can.
"""

from __future__ import annotations

import zoneinfo
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from decimal import Decimal

from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from labgpu.bookings.models import Booking
from labgpu.bookings.services.slots import fits, pool_full
from labgpu.bookings.services.snapshot import Ask, BookingSnapshot
from labgpu.budgets.models import Budget
from labgpu.budgets.selectors import THRESHOLDS as BUDGET_THRESHOLDS
from labgpu.budgets.selectors import BudgetPeriod, budget_alerted, budget_raisers, money
from labgpu.catalog.models import NodePool
from labgpu.core.errors import ApplicationError, Conflict, NotPermitted
from labgpu.core.timeutils import hours, is_aligned, month_bounds, overlap
from labgpu.quotas.selectors import TWO_PLACES

QUOTA_ALERTS = (80, 100)  # percent of a month's quota at which the lab's admins hear about it


def check_extends_later(ask: Ask, snap: BookingSnapshot) -> None:
    if ask.extension and ask.end <= ask.booking.end:  # type: ignore[union-attr]
        raise ApplicationError(
            _("The new end must be later than the current one."), code="end_not_later", field="end"
        )


def check_pool_open(ask: Ask, snap: BookingSnapshot) -> None:
    if not snap.pool.is_active:
        raise ApplicationError(
            _("%(pool)s is closed.") % {"pool": snap.pool.name}, code="pool_inactive", field="pool"
        )


def check_lab_may_book(ask: Ask, snap: BookingSnapshot) -> None:
    pool = snap.pool
    if not pool.restricted or pool.lab_allowed:
        return
    closed_to_all_my_labs = not NodePool.allowed_labs.through.objects.filter(
        nodepool_id=pool.pk, lab__memberships__user=ask.user
    ).exists()
    if closed_to_all_my_labs:  # then, to this user, the pool does not exist (I-6)
        raise ApplicationError(
            _('Invalid pk "%(pk)s" - object does not exist.') % {"pk": pool.pk},
            code="does_not_exist",
            field="pool",
        )
    raise NotPermitted(
        _("%(lab)s may not book %(pool)s.") % {"lab": ask.lab.name, "pool": pool.name},
        code="lab_not_allowed",
        field="pool",
    )


def _hours(minutes: int) -> str:
    """Minutes as hours the way the SPA's hint states the limits: "168 hours", "0.5 hours"."""
    value = minutes / 60
    return ngettext("%(hours)s hour", "%(hours)s hours", 1 if value == 1 else 2) % {
        "hours": f"{value:g}"
    }


def check_times(ask: Ask, snap: BookingSnapshot) -> None:
    """The pool's time rules. An on-demand booking starts now, and an extension keeps its start:
    neither start is checked against the past or the grid (a moved booking's new start is)."""
    pool, start, end = snap.pool, ask.start, ask.end
    start_is_given = not ask.on_demand and not ask.extension
    grid = pool.granularity_minutes
    if end <= start:
        raise ApplicationError(
            _("The end must be after the start."), code="end_before_start", field="end"
        )
    if start_is_given and start < ask.moment:
        raise ApplicationError(_("The start is in the past."), code="start_in_past", field="start")
    if start_is_given and not is_aligned(start, grid):
        raise ApplicationError(
            _("Bookings in %(pool)s start on a %(grid)s-minute grid.")
            % {"pool": pool.name, "grid": grid},
            code="off_granularity",
            field="start",
        )
    if not is_aligned(end, grid):
        raise ApplicationError(
            _("Bookings in %(pool)s end on a %(grid)s-minute grid.")
            % {"pool": pool.name, "grid": grid},
            code="off_granularity",
            field="end",
        )
    minutes = (end - start).total_seconds() / 60
    if minutes < pool.min_duration_minutes:
        raise ApplicationError(
            _("Bookings in %(pool)s last at least %(duration)s.")
            % {"pool": pool.name, "duration": _hours(pool.min_duration_minutes)},
            code="too_short",
            field="end",
        )
    if minutes > pool.max_duration_minutes:
        raise ApplicationError(
            _("Bookings in %(pool)s last at most %(duration)s.")
            % {"pool": pool.name, "duration": _hours(pool.max_duration_minutes)},
            code="too_long",
            field="end",
        )
    if start > ask.moment + timedelta(days=pool.max_days_ahead):
        raise ApplicationError(
            _("%(pool)s takes bookings at most %(days)s days ahead.")
            % {"pool": pool.name, "days": pool.max_days_ahead},
            code="too_far_ahead",
            field="start",
        )


def check_blackouts(ask: Ask, snap: BookingSnapshot) -> None:
    if not snap.blackouts:
        return
    blackout = snap.blackouts[0]
    raise ApplicationError(
        _("%(pool)s is closed for maintenance from %(start)s to %(end)s.")
        % {
            "pool": snap.pool.name,
            "start": blackout.start.isoformat(),
            "end": blackout.end.isoformat(),
        },
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


def week_bounds(moment: datetime, tz: zoneinfo.ZoneInfo) -> tuple[datetime, datetime]:
    """The member's local week (Monday 00:00 to the next) around `moment`, as UTC instants.

    DST-aware: a week with a change lasts 167 or 169 hours. In UTC, because Python subtracts two
    datetimes sharing one tzinfo by their wall clocks (7 days, always).
    """
    local = moment.astimezone(tz)
    monday = (local - timedelta(days=local.weekday())).replace(
        hour=0, minute=0, second=0, microsecond=0
    )
    return monday.astimezone(UTC), (monday + timedelta(days=7)).astimezone(UTC)


def check_member_limits(ask: Ask, snap: BookingSnapshot) -> None:
    """A lab may cap a member's bookings at a time and hours per week (their own time zone)."""
    membership, start, end = ask.membership, ask.start, ask.end
    if membership is None:
        return
    if membership.max_concurrent_bookings is not None:
        overlapping = sum(
            1
            for b_start, b_end, status in snap.member_bookings
            if status in Booking.LIVE_STATUSES and b_start < end and b_end > start
        )
        if overlapping >= membership.max_concurrent_bookings:
            raise Conflict(
                _("Your lab allows you %(limit)s bookings at a time.")
                % {"limit": membership.max_concurrent_bookings},
                code="member_concurrency_exceeded",
                extra={"limit": membership.max_concurrent_bookings},
            )
    if membership.max_hours_per_week is None:
        return
    tz = zoneinfo.ZoneInfo(ask.user.timezone or "UTC")
    week_start, week_end = week_bounds(ask.added_from, tz)  # the weeks the ask adds time to
    limit = timedelta(hours=membership.max_hours_per_week)
    while week_start < end:
        new = min(end, week_end) - max(start, week_start)
        existing = sum(
            (
                overlap(b_start, b_end, week_start, week_end)
                for b_start, b_end, _status in snap.member_bookings
            ),
            timedelta(0),
        )
        if existing + new > limit:
            left = max(limit - existing, timedelta(0)).total_seconds() / 3600
            week = week_start.astimezone(tz).date().isoformat()
            raise Conflict(
                _(
                    "Your lab allows you %(limit)s hours per week; "
                    "%(left)s left in the week of %(week)s."
                )
                % {"limit": membership.max_hours_per_week, "left": f"{left:g}", "week": week},
                code="member_hours_exceeded",
                extra={
                    "limit_hours": membership.max_hours_per_week,
                    "remaining_hours": left,
                    "week_start": week,
                },
            )
        week_start, week_end = week_bounds(week_end, tz)


def check_capacity(ask: Ask, snap: BookingSnapshot) -> None:
    """A node of the pool is free over the whole reserved period (I-1; slots.py places it)."""
    if fits(snap.pool.capacity, snap.taken, snap.reserved):
        return
    if not ask.extension:
        raise pool_full(
            snap.pool, duration=ask.end - ask.start, after=ask.start, exclude_id=ask.exclude_id
        )
    assert ask.booking is not None
    old_end = ask.booking.end
    raise pool_full(
        snap.pool,
        duration=ask.end - old_end,
        after=old_end,
        exclude_id=ask.booking.pk,
        message=_("%(pool)s is booked right after your booking.") % {"pool": snap.pool.name},
    )


def gpu_count(ask: Ask, snap: BookingSnapshot) -> int:
    return ask.booking.gpu_count if ask.booking else snap.pool.instance_type.gpu_count


def gpu_hours_in_month(ask: Ask, snap: BookingSnapshot, month_begin, month_end) -> Decimal:  # type: ignore[no-untyped-def]
    booked = Decimal(hours(overlap(ask.start, ask.end, month_begin, month_end)))
    return (booked * gpu_count(ask, snap)).quantize(TWO_PLACES)


def check_quota(ask: Ask, snap: BookingSnapshot) -> None:
    """Committed + used GPU-hours stay within the lab's quota in every month touched (I-2).

    No quota row means no hours. The rows are locked by the time this reads them (snapshot.py).
    """
    for month in snap.quota:
        needed = gpu_hours_in_month(ask, snap, *month_bounds(month.month))
        remaining = month.usage.remaining if month.usage else Decimal(0)
        if month.quota is None or needed > remaining:
            raise Conflict(
                _(
                    "Not enough quota for %(month)s: %(needed)s GPU-hours needed, "
                    "%(remaining)s remaining."
                )
                % {"month": f"{month.month:%Y-%m}", "needed": needed, "remaining": remaining},
                code="quota_exceeded",
                extra={
                    "month": month.month.isoformat(),
                    "needed_gpu_hours": str(needed),
                    "remaining_gpu_hours": str(remaining),
                },
            )


def check_budget(ask: Ask, snap: BookingSnapshot) -> None:
    """Consumed + forecast + committed cost, with this booking's, stays within each hard budget
    of the lab and of its cost centre in every period touched (I-11; docs/budgets.md).

    A lab without a budget stops at its `has_budget` flag, read in the pool lock's statement
    under a share lock on the lab row (snapshot.pool_lock): no extra statement, and a booking
    racing budget_create (which locks the lab row for update) either waits and sees the budget
    or commits before it exists. The budget rows are locked by the time this reads them
    (snapshot.py), after the quota rows.
    """
    if not snap.lab_has_budget:
        return
    for period in snap.budgets:
        budget = period.budget
        if budget.enforcement != Budget.Enforcement.HARD:
            continue
        if period.spend.total + period.needed <= budget.amount:
            continue
        raisers = budget_raisers(ask.lab.pk)
        scope = budget.cost_centre.code if budget.cost_centre else ask.lab.name
        left, needed = money(period.left), money(period.needed)
        raise Conflict(
            _(
                "This booking costs %(needed)s %(currency)s from the budget of %(scope)s for "
                "%(period)s, which has %(left)s %(currency)s left of %(amount)s %(currency)s. "
                "Lab admins can raise it: %(admins)s."
            )
            % {
                "needed": needed,
                "currency": budget.currency,
                "scope": scope,
                "period": _period_label(period.begin, period.end),
                "left": left,
                "amount": budget.amount,
                "admins": ", ".join(raisers) or "-",
            },
            code="budget_exceeded",
            extra={
                "budget": budget.pk,
                "cost_centre": budget.cost_centre_id,
                "period_start": period.begin.isoformat(),
                "period_end": period.end.isoformat(),
                "currency": budget.currency,
                "amount": str(budget.amount),
                "spent": str(money(period.spend.total)),
                "needed": str(needed),
                "left": str(left),
                "raise_by": raisers,
            },
        )


def _period_label(begin: datetime, end: datetime) -> str:
    last = end - timedelta(days=1)
    if begin.day == 1 and last.month == begin.month and end.day == 1:
        return f"{begin:%Y-%m}"
    return f"{begin:%Y-%m-%d} – {last:%Y-%m-%d}"


Rule = Callable[[Ask, BookingSnapshot], None]
RULES: tuple[Rule, ...] = (
    check_extends_later,
    check_pool_open,
    check_lab_may_book,
    check_times,
    check_blackouts,
    check_member_limits,
    check_capacity,
    check_quota,
    check_budget,
)


def check_all(ask: Ask, snap: BookingSnapshot) -> None:
    for rule in RULES:
        rule(ask, snap)


def needs_approval(ask: Ask, snap: BookingSnapshot) -> bool:
    return snap.pool.requires_approval


def crosses_quota_alert(ask: Ask, snap: BookingSnapshot) -> bool:
    """Whether the booking takes a month past an alert threshold its lab admins have not heard of
    (decided under the quota lock, so the common case costs nothing more)."""
    for month in snap.quota:
        quota, usage = month.quota, month.usage
        if quota is None or usage is None or quota.gpu_hours <= 0:
            continue
        needed = gpu_hours_in_month(ask, snap, *month_bounds(month.month))
        percent = (usage.used + usage.committed + needed) * 100 / quota.gpu_hours
        if any(percent >= t > quota.notified_percent for t in QUOTA_ALERTS):
            return True
    return False


def budget_alerts_due(ask: Ask, snap: BookingSnapshot) -> list[tuple[BudgetPeriod, int]]:
    """The thresholds (50, 80, 100 %) of a budget period the booking takes it to that its lab's
    admins have not heard of, the highest per period (decided under the budget lock)."""
    if not snap.lab_has_budget:
        return []
    reaching = [p for p in snap.budgets if p.percent_after >= BUDGET_THRESHOLDS[0]]
    budget_alerted(reaching)
    due = []
    for period in reaching:
        crossed = [t for t in BUDGET_THRESHOLDS if period.percent_after >= t]
        if crossed[-1] not in period.alerted:
            due.append((period, crossed[-1]))
    return due
