"""The booking express lane on PostgreSQL (labgpu/bookings/express.py): one SQL function.

The function's text lives in bookings/sql/, one file per version, so this migration always installs
the version it was written for; a change ships as a new file and a new migration.
"""

from pathlib import Path

from django.db import migrations

SQL = Path(__file__).resolve().parent.parent / "sql" / "book_express_v1.sql"
DROP = (
    "DROP FUNCTION IF EXISTS labgpu_book_express("
    "text, bigint, bigint, timestamptz, timestamptz, boolean, text, timestamptz, text, text, text, text)"
)


def forwards(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(SQL.read_text())


def backwards(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(DROP)


class Migration(migrations.Migration):
    dependencies = [("bookings", "0004_booking_actual_cost_booking_failure_reason_and_more")]

    operations = [migrations.RunPython(forwards, backwards, elidable=False)]
