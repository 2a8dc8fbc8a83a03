"""Drop the booking express lane's SQL function: every booking rule now lives once, in Python
(labgpu/bookings/services/rules.py)."""

from django.db import migrations

DROP = (
    "DROP FUNCTION IF EXISTS labgpu_book_express(text, bigint, bigint, timestamptz, timestamptz,"
    " boolean, text, timestamptz, text, text, text, text)"
)


class Migration(migrations.Migration):
    dependencies = [("bookings", "0007_period_indexes")]

    # Not reversible into the function: its text is gone with the lane.
    operations = [migrations.RunSQL(DROP, migrations.RunSQL.noop, elidable=False)]
