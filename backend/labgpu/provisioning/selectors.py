from decimal import Decimal

from django.db.models import DecimalField, Q, QuerySet, Sum, Value
from django.db.models.functions import Coalesce

from labgpu.accounts.models import User
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
        .select_related("owner_user", "owner_lab")
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
