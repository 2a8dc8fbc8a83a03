from decimal import Decimal
from statistics import median

from django.db.models import DecimalField, F, Q, QuerySet, Sum, Value, Window
from django.db.models.functions import Coalesce, RowNumber

from labgpu.accounts.models import Lab, User
from labgpu.accounts.selectors import lab_ids_of
from labgpu.provisioning.models import Node, Volume


def nodes_visible_to(user: User) -> QuerySet[Node]:
    nodes = Node.objects.select_related("booking", "booking__pool", "booking__lab")
    if user.is_site_admin:
        return nodes
    return nodes.filter(booking__lab_id__in=lab_ids_of(user))


def volumes_visible_to(user: User) -> QuerySet[Volume]:
    """Site admins: every volume; others: their own and their labs' (deleted ones left out)."""
    volumes = (
        Volume.objects.exclude(state=Volume.State.DELETED)
        .select_related("owner_user", "owner_lab", "attached_node")
        .annotate(
            cost=Coalesce(
                Sum("storage_usage__cost"),
                Value(Decimal(0)),
                output_field=DecimalField(max_digits=14, decimal_places=6),
            )
        )
        .order_by("region", "name")
    )
    if user.is_site_admin:
        return volumes
    return volumes.filter(Q(owner_user=user) | Q(owner_lab_id__in=lab_ids_of(user)))


# How many of a pool's latest ready nodes tell how long one takes to come up.
READY_TIME_SAMPLES = 20


def pool_ready_times(*, pool_ids: list[int] | None = None) -> dict[int, dict]:
    """Per pool: the median and slowest seconds from a node's creation to its handover (boot,
    bootstrap and the health gate), over its READY_TIME_SAMPLES latest ready nodes. The booking
    form says this beside "Start now": an on-demand booking's node is that long away."""
    ranked = (
        Node.objects.filter(ready_at__isnull=False, ready_at__gte=F("created_at"))
        .annotate(
            rank=Window(
                RowNumber(), partition_by=[F("booking__pool_id")], order_by=F("ready_at").desc()
            )
        )
        .values_list("booking__pool_id", "created_at", "ready_at", "rank")
    )
    if pool_ids is not None:
        ranked = ranked.filter(booking__pool_id__in=pool_ids)
    seconds: dict[int, list[float]] = {}
    for pool_id, created_at, ready_at, rank in ranked:
        if rank <= READY_TIME_SAMPLES:
            seconds.setdefault(pool_id, []).append((ready_at - created_at).total_seconds())
    return {
        pool_id: {
            "pool": pool_id,
            "median_seconds": round(median(values)),
            "max_seconds": round(max(values)),
            "samples": len(values),
        }
        for pool_id, values in seconds.items()
    }


def volume_payer(volume: Volume) -> tuple[int | None, int | None]:
    """(lab, user) the storage is charged to: the owning lab, or for a user's volume the lab of
    the booking that last used it (else the user's first lab)."""
    if volume.owner_lab_id:
        return volume.owner_lab_id, None
    node = volume.last_attached_node
    if node is not None:
        return node.booking.lab_id, volume.owner_user_id
    lab_id = (
        Lab.objects.filter(memberships__user_id=volume.owner_user_id)
        .order_by("pk")
        .values_list("pk", flat=True)
        .first()
    )
    return lab_id, volume.owner_user_id
