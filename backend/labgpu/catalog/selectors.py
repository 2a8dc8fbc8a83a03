from django.db.models import Q, QuerySet

from labgpu.accounts.models import User
from labgpu.accounts.selectors import lab_ids_of
from labgpu.catalog.models import NodePool


def pools_visible_to(user: User) -> QuerySet[NodePool]:
    """Members see pools open to all labs or to one of theirs; site admins see every pool."""
    pools = NodePool.objects.select_related("instance_type")
    if user.is_site_admin:
        return pools
    lab_ids = lab_ids_of(user)
    if not lab_ids:
        return pools.none()
    return pools.filter(
        Q(allowed_labs__isnull=True) | Q(allowed_labs__in=lab_ids), is_active=True
    ).distinct()
