from datetime import datetime
from decimal import Decimal

from labgpu.bookings.models import Booking
from labgpu.provisioning.models import Node
from labgpu.usage.models import UsageRecord


def usage_record_node(*, node: Node) -> UsageRecord | None:
    """Meter a destroyed node's droplet: from its creation at the provider to confirmed destroy.

    The lab pays only for a node it was handed healthy (ready, never failed); everything else is
    still recorded, at our cost, so the ledger has every droplet (I-8).
    """
    if not node.provider_id or node.provider_created_at is None or node.destroyed_at is None:
        return None  # no droplet was ever made: nothing was billed
    return usage_record_droplet(
        node=node,
        droplet_id=node.provider_id,
        started_at=node.provider_created_at,
        ended_at=node.destroyed_at,
        charged=node.ready_at is not None and node.failed_at is None,
    )


def usage_record_droplet(
    *, node: Node, droplet_id: str, started_at: datetime, ended_at: datetime, charged: bool
) -> UsageRecord:
    """The one usage record of droplet `droplet_id` (unique per provider account); a second call
    for the same droplet returns the first record unchanged."""
    booking = node.booking
    record, _ = UsageRecord.objects.get_or_create(
        provider_account_id=node.provider_account_id,
        droplet_id=droplet_id,
        defaults={
            "node": node,
            "booking": booking,
            "lab_id": booking.lab_id,
            "user_id": booking.user_id,
            "pool_id": booking.pool_id,
            "instance_type_id": booking.pool.instance_type_id,
            "started_at": started_at,
            "ended_at": ended_at,
            "seconds": max(0, int((ended_at - started_at).total_seconds())),
            "gpu_count": booking.gpu_count,
            "price_per_hour": booking.price_per_hour,
            "charged_to_lab": charged,
        },
    )
    return record


def booking_meter(*, booking: Booking) -> None:
    """Final usage of a booking: only nodes that served the lab count against quota and bill."""
    charged = [r for r in booking.usage_records.all() if r.charged_to_lab]
    gpu_hours = sum((r.gpu_hours for r in charged), Decimal(0))
    cost = sum((r.cost for r in charged), Decimal(0))
    Booking.objects.filter(pk=booking.pk).update(consumed_gpu_hours=gpu_hours, actual_cost=cost)
