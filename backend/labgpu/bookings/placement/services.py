"""`booking_place`: book the earliest window of a GPU model across the pools a lab may book.

The window is chosen without locks (placement/selectors.py) and booked through
`changes.booking_create` — the one way a booking is made: the pool row locked, every rule of the
rulebook checked over what the lock holder sees, the exclusion constraint as the last line (I-1).
Between the choice and the lock another request may take the window; the rulebook then refuses
that pool (`pool_full`), and the next earliest window is tried, then the windows are read anew
(ROUNDS times at most). Only such pool-specific refusals move on to another pool: the lab's
quota, the member's limits and the budgets answer as they would for the single booking, unchanged.
"""

from __future__ import annotations

from datetime import datetime

from django.utils.translation import gettext as _

from labgpu.accounts.models import Lab, User
from labgpu.bookings.models import Booking
from labgpu.bookings.placement.selectors import (
    PlacementAsk,
    PlacementWindow,
    placement_alternatives,
    placement_pools,
    placement_windows,
    takes,
    window_payload,
)
from labgpu.bookings.services.changes import _resolve_lab, booking_create
from labgpu.bookings.services.idempotency import idempotent_replay
from labgpu.bookings.services.rules import _hours
from labgpu.catalog.models import NodePool
from labgpu.core.errors import ApplicationError, Conflict

# A refusal that is about the pool, not the lab or the member: another pool may still take it.
TRY_NEXT_POOL = frozenset({"pool_full", "blackout", "pool_inactive", "does_not_exist"})
ROUNDS = 3  # how many times the windows are read anew when every one was taken meanwhile


class NoPlacement(Conflict):
    """No pool of the model the lab may book has the time free; `extra["alternatives"]` lists
    the earliest windows elsewhere or later (pool, region, start, end)."""

    default_code = "no_placement"

    def __init__(self, message: str, *, alternatives: list[PlacementWindow]) -> None:
        super().__init__(message, extra={"alternatives": [window_payload(w) for w in alternatives]})


def _moment(moment: datetime) -> str:
    return f"{moment:%Y-%m-%d %H:%M} UTC"


def bookable_pools(*, user: User, lab_id: int | None, ask: PlacementAsk) -> list[NodePool]:
    """The pools `placement_pools` finds that take the asked duration; a field error when no pool
    of the model is open to the lab (`gpu_model`) or none takes that many hours (`hours`)."""
    pools = placement_pools(user=user, lab_id=lab_id, ask=ask)
    if not pools:
        if ask.regions:
            message = _("No pool of %(model)s in %(regions)s is open to your lab.") % {
                "model": ask.gpu_model,
                "regions": ", ".join(ask.regions),
            }
        else:
            message = _("No pool of %(model)s is open to your lab.") % {"model": ask.gpu_model}
        raise ApplicationError(message, code="no_pool_of_model", field="gpu_model")
    taking = [pool for pool in pools if takes(pool, ask.minutes)]
    if not taking:
        raise ApplicationError(
            _("No %(model)s pool takes bookings of %(duration)s (the length, and its grid).")
            % {"model": ask.gpu_model, "duration": _hours(ask.minutes)},
            code="duration_not_offered",
            field="hours",
        )
    return taking


def booking_place(
    *,
    user: User,
    ask: PlacementAsk,
    lab: Lab | None = None,
    purpose: str = "",
    jupyter: bool = False,
    cost_centre: int | None = None,
    idempotency_key: str | None = None,
    request_fingerprint: str = "",
) -> tuple[Booking, bool]:
    """Book the earliest window `ask` allows in any pool of its model `lab` may book; returns
    (booking, created) as `booking_create` does (a retried Idempotency-Key: the first booking).
    Raises `NoPlacement` (409, with alternatives) when no pool has the time, or the refusal of
    any rule that is not about the pool (quota, member limits, budget, …) as it is."""
    if idempotency_key:
        replay = idempotent_replay(user, idempotency_key, request_fingerprint)
        if replay:
            return replay, False
    lab, _membership = _resolve_lab(user, lab)
    pools = bookable_pools(user=user, lab_id=lab.pk, ask=ask)
    for _round in range(ROUNDS):
        # Without the member's limits: booking_create checks them, and its refusal is the answer.
        windows = placement_windows(pools, user=user, membership=None, ask=ask)
        if not windows:
            break
        for window in windows:
            try:
                return booking_create(
                    user=user,
                    pool=window.pool.pk,
                    start=window.start,
                    end=window.end,
                    purpose=purpose,
                    lab=lab,
                    jupyter=jupyter,
                    cost_centre=cost_centre,
                    idempotency_key=idempotency_key,
                    request_fingerprint=request_fingerprint,
                )
            except ApplicationError as refusal:
                if refusal.code not in TRY_NEXT_POOL:
                    raise
    values = {"model": ask.gpu_model, "duration": _hours(ask.minutes)}
    if ask.before is None:
        message = _("No %(model)s pool your lab may book has %(duration)s free.") % values
    else:
        message = _(
            "No %(model)s pool your lab may book has %(duration)s free before %(before)s."
        ) % {**values, "before": _moment(ask.before)}
    raise NoPlacement(
        message,
        alternatives=placement_alternatives(user=user, lab_id=lab.pk, membership=None, ask=ask),
    )
