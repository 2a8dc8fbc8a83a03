"""A booking may be `offered`: held for a waitlist entry (labgpu.waitlist) until its owner takes it.

An offer holds its slot like any live booking, so the live-slot exclusion constraint (0002) and the
live and quota partial indexes (0007) are written again with `offered` among the live statuses:
a held slot is refused to everyone else by the database (I-1), and its hours count (I-2).
"""

from django.db import migrations, models

OLD_LIVE = "('pending', 'scheduled', 'provisioning', 'ready', 'ending')"
OLD_QUOTA = "('pending', 'scheduled', 'provisioning', 'ready', 'ending', 'completed')"
LIVE = "('offered', 'pending', 'scheduled', 'provisioning', 'ready', 'ending')"
QUOTA = "('offered', 'pending', 'scheduled', 'provisioning', 'ready', 'ending', 'completed')"


def statements(live: str, quota: str) -> str:
    return f"""
ALTER TABLE bookings_booking DROP CONSTRAINT IF EXISTS booking_live_slot_no_overlap;
ALTER TABLE bookings_booking ADD CONSTRAINT booking_live_slot_no_overlap
    EXCLUDE USING gist (
        pool_id WITH =,
        slot WITH =,
        tstzrange(reserved_start, reserved_end, '[)') WITH &&
    ) WHERE (status IN {live})
    DEFERRABLE INITIALLY IMMEDIATE;
DROP INDEX IF EXISTS booking_lab_period;
CREATE INDEX booking_lab_period ON bookings_booking
    USING gist (lab_id, tstzrange(start, "end")) WHERE status IN {quota};
DROP INDEX IF EXISTS booking_pool_live_reserved;
CREATE INDEX booking_pool_live_reserved ON bookings_booking (pool_id, reserved_start)
    WHERE status IN {live};
"""


class Migration(migrations.Migration):
    dependencies = [("bookings", "0014_booking_cost_centre")]

    operations = [
        migrations.AlterField(
            model_name="booking",
            name="status",
            field=models.CharField(
                choices=[
                    ("pending", "Pending approval"),
                    ("offered", "Offered from the waitlist"),
                    ("scheduled", "Scheduled"),
                    ("provisioning", "Provisioning"),
                    ("ready", "Ready"),
                    ("ending", "Ending"),
                    ("completed", "Completed"),
                    ("cancelled", "Cancelled"),
                    ("rejected", "Rejected"),
                    ("expired", "Expired"),
                    ("failed", "Failed"),
                ],
                db_index=True,
                max_length=16,
            ),
        ),
        migrations.RunSQL(statements(LIVE, QUOTA), statements(OLD_LIVE, OLD_QUOTA), elidable=False),
    ]
