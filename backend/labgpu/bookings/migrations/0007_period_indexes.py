"""Indexes that bound a query for one period on both sides, so its cost does not grow with history.

A B-tree on (lab, start) answers `start < month_end` by reading every earlier booking of the lab;
these GiST indexes answer `tstzrange(start, end) && tstzrange(lo, hi)` (bookings.models.Overlaps)
with both bounds:

- booking_lab_period: the quota usage of a lab in a month (quotas.selectors.quota_usage), over the
  statuses whose hours count (Booking.QUOTA_STATUSES);
- booking_pool_period: a pool's bookings in a period, any status (the calendar's list and busy
  blocks);
- booking_pool_live_reserved: live reservations of a pool from a moment on (slot choice,
  availability, next free windows) without reading the pool's ended history.

btree_gist (for the id columns) comes from 0002.
"""

from django.db import migrations

QUOTA = "('pending', 'scheduled', 'provisioning', 'ready', 'ending', 'completed')"
LIVE = "('pending', 'scheduled', 'provisioning', 'ready', 'ending')"

CREATE = f"""
CREATE INDEX booking_lab_period ON bookings_booking
    USING gist (lab_id, tstzrange(start, "end")) WHERE status IN {QUOTA};
CREATE INDEX booking_pool_period ON bookings_booking USING gist (pool_id, tstzrange(start, "end"));
CREATE INDEX booking_pool_live_reserved ON bookings_booking (pool_id, reserved_start)
    WHERE status IN {LIVE};
"""
DROP = """
DROP INDEX IF EXISTS booking_lab_period;
DROP INDEX IF EXISTS booking_pool_period;
DROP INDEX IF EXISTS booking_pool_live_reserved;
"""


class Migration(migrations.Migration):
    dependencies = [("bookings", "0006_booking_capacity_warned_at")]

    operations = [migrations.RunSQL(CREATE, DROP, elidable=False)]
