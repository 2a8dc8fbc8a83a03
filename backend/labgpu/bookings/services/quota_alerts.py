"""Tell a lab's admins once when its committed + used hours cross 80 % and 100 % of a month's quota.

Sent after the booking's transaction commits; whether a booking crosses a threshold is decided
under the quota lock by `rules.crosses_quota_alert`, so the common case sends nothing and costs
nothing.
"""

from __future__ import annotations

from labgpu.accounts.models import Membership
from labgpu.bookings import notifications
from labgpu.bookings.models import Booking
from labgpu.bookings.services.rules import QUOTA_ALERTS
from labgpu.bookings.services.snapshot import months_touched
from labgpu.quotas.models import Quota
from labgpu.quotas.selectors import quota_usage


def quota_alerts_send(*, booking: Booking) -> None:
    for month in months_touched(booking.start, booking.end):
        quota = (
            Quota.objects.filter(
                lab_id=booking.lab_id, instance_type_id=booking.pool.instance_type_id, month=month
            )
            .select_related("lab", "instance_type")
            .first()
        )
        if quota is None or quota.gpu_hours <= 0:
            continue
        usage = quota_usage(
            lab_id=quota.lab_id, instance_type_id=quota.instance_type_id, month=month
        )
        percent = (usage.used + usage.committed) * 100 / quota.gpu_hours
        crossed = [t for t in QUOTA_ALERTS if percent >= t and quota.notified_percent < t]
        if not crossed:
            continue
        # CAS on the threshold: parallel bookings crossing it together send one email.
        if Quota.objects.filter(pk=quota.pk, notified_percent=quota.notified_percent).update(
            notified_percent=crossed[-1]
        ):
            admins = [
                m.user
                for m in Membership.objects.filter(
                    lab_id=quota.lab_id, role=Membership.Role.LAB_ADMIN
                ).select_related("user")
            ]
            notifications.quota_threshold(
                lab=quota.lab,
                instance_type=quota.instance_type,
                month=month,
                percent=crossed[-1],
                recipients=admins,
            )
