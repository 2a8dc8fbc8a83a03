"""Once installed the booking express lane's SQL function (labgpu_book_express).

The lane is gone (issue 13: one rulebook, in Python); 0007 drops the function from databases that
have it. This migration stays, doing nothing, because later ones depend on its name.
"""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("bookings", "0004_booking_actual_cost_booking_failure_reason_and_more")]

    operations = []
