from django.db.models import QuerySet

from labgpu.accounts.models import User
from labgpu.accounts.selectors import lab_ids_of
from labgpu.provisioning.models import Node


def nodes_visible_to(user: User) -> QuerySet[Node]:
    nodes = Node.objects.select_related("booking", "booking__pool", "booking__lab")
    if user.is_site_admin:
        return nodes
    return nodes.filter(booking__lab_id__in=lab_ids_of(user))
