"""Flexible placement (issue 25 item 3): "N hours on GPU model X between A and B, any region (or
these regions)".

- `selectors.py` — the pools of a GPU model a lab may book and the earliest window in each,
  through the pool's own window search (`selectors.next_free_windows`, bounded by B);
- `services.py` — `booking_place`: books the earliest window through `changes.booking_create`,
  the one way a booking is made (pool lock, every rule, the exclusion constraint), trying the
  next pool only when the rulebook refuses a pool for that pool's own reason (full by now, a new
  blackout, closed); quota, member limits and budgets answer as they do for any booking;
- `serializers.py`, `apis.py` — `GET /api/v1/availability/placement/` and
  `POST /api/v1/bookings/place/` (docs/api.md).
"""
