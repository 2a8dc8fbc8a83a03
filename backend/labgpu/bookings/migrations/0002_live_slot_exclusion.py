"""Invariant I-1 on PostgreSQL: no two live bookings of a pool hold the same slot at once.

Written as SQL for PostgreSQL only, because SQLite (the embedded default) has no exclusion
constraints; there the IMMEDIATE transactions of booking_create serialise writers instead.
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


def forwards(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(CREATE)


def backwards(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(DROP)


class Migration(migrations.Migration):
    dependencies = [("bookings", "0001_initial")]

    operations = [migrations.RunPython(forwards, backwards, elidable=False)]
