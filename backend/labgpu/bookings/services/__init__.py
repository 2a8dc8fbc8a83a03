"""Writes about bookings, by concern:

- `snapshot.py` — what the rules read, loaded under the pool (and quota) locks;
- `rules.py` — every booking rule, written once, used by create and extend;
- `slots.py` — capacity: slot choice, repacking, next free windows on a full pool;
- `changes.py` — create, extend, move, cancel; `decisions.py` — approve, reject, expire;
- `series.py` — recurring series: every occurrence through `changes.book`, the rows of earlier
  occurrences written before later ones are checked (its docstring: the seam for new rules);
- `idempotency.py`, `quota_alerts.py`; `notebook.py` — JupyterLab's token and access.

Other apps import from here (`labgpu.bookings.services`), not from the modules.
"""

from labgpu.bookings.services.changes import (
    ON_DEMAND_TOLERANCE,
    START_BOOKING_TASK,
    WAITLIST_PROMOTE_TASK,
    WIND_DOWN_TASK,
    _resolve_lab,
    book,
    booking_cancel,
    booking_create,
    booking_extend,
    booking_move,
    booking_offer_release,
    booking_offer_take,
    capacity_freed,
)
from labgpu.bookings.services.decisions import (
    booking_approve,
    booking_expire,
    booking_reject,
    bookings_decide,
    bookings_expire_stale_pending,
)
from labgpu.bookings.services.idempotency import idempotency_fingerprint, idempotency_keys_purge
from labgpu.bookings.services.notebook import (
    NOTEBOOK_PORT,
    NotebookAccess,
    booking_notebook_token,
    notebook_access,
)
from labgpu.bookings.services.slots import PoolFull
from labgpu.bookings.services.snapshot import Ask, pool_lock, pools_lock

booking_lab_resolve = _resolve_lab

__all__ = [
    "NOTEBOOK_PORT",
    "ON_DEMAND_TOLERANCE",
    "START_BOOKING_TASK",
    "WAITLIST_PROMOTE_TASK",
    "WIND_DOWN_TASK",
    "Ask",
    "NotebookAccess",
    "PoolFull",
    "book",
    "booking_approve",
    "booking_cancel",
    "booking_create",
    "booking_expire",
    "booking_extend",
    "booking_lab_resolve",
    "booking_move",
    "booking_notebook_token",
    "booking_offer_release",
    "booking_offer_take",
    "booking_reject",
    "bookings_decide",
    "bookings_expire_stale_pending",
    "capacity_freed",
    "idempotency_fingerprint",
    "idempotency_keys_purge",
    "notebook_access",
    "pool_lock",
    "pools_lock",
]
