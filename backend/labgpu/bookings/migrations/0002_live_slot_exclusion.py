"""Invariant I-1 in the database: no two live bookings of a pool hold the same slot at once.

An exclusion constraint over (pool, slot, reserved period); btree_gist lets GiST compare the ids.
DEFERRABLE so that slot repacking inside one transaction may pass through intermediate states.
"""

from django.db import migrations

LIVE = "('pending', 'scheduled', 'provisioning', 'ready', 'ending')"

CREATE = f"""
CREATE EXTENSION IF NOT EXISTS btree_gist;
ALTER TABLE bookings_booking ADD CONSTRAINT booking_live_slot_no_overlap
    EXCLUDE USING gist (
        pool_id WITH =,
        slot WITH =,
        tstzrange(reserved_start, reserved_end, '[)') WITH &&
    ) WHERE (status IN {LIVE})
    DEFERRABLE INITIALLY IMMEDIATE;
"""
DROP = "ALTER TABLE bookings_booking DROP CONSTRAINT IF EXISTS booking_live_slot_no_overlap;"


class Migration(migrations.Migration):
    dependencies = [("bookings", "0001_initial")]

    operations = [migrations.RunSQL(CREATE, DROP, elidable=False)]
