from django.db.models import Q, QuerySet

from labgpu.accounts.models import Membership, User
from labgpu.accounts.selectors import lab_ids_of
from labgpu.catalog.models import NodePool
from labgpu.core.rows import JoinedRows


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


_ALLOWED = NodePool.allowed_labs.through._meta.db_table
_MEMBERSHIP = Membership._meta.db_table
# pool_visible_to's statement: pools_visible_to's rule for one pool, written out once (core.rows)
# and prepared, as the pool lookup of every calendar read (busy, availability) where the two ORM
# statements it replaces — the member's lab ids, then the pool joined with its allowed labs,
# DISTINCT — cost a third of the request's CPU to build and compile. The rule: a site admin sees
# every pool; a member of some lab, an active pool open to all labs (no allowed labs) or allowed
# to one of theirs; anyone else, none. tests/test_pool_visible_to.py holds the two to each other.
_POOL_VISIBLE_SQL = f"""
    FROM "{NodePool._meta.db_table}" p
   WHERE p.id = %(pool)s AND (%(site_admin)s::boolean OR p.is_active AND (
           NOT EXISTS (SELECT 1 FROM "{_ALLOWED}" a WHERE a.nodepool_id = p.id)
           AND EXISTS (SELECT 1 FROM "{_MEMBERSHIP}" m WHERE m.user_id = %(user)s)
        OR EXISTS (SELECT 1 FROM "{_ALLOWED}" a JOIN "{_MEMBERSHIP}" m ON m.lab_id = a.lab_id
                    WHERE a.nodepool_id = p.id AND m.user_id = %(user)s)))
"""  # noqa: S608 - only table names are formatted in; values are parameters
_POOL_VISIBLE = JoinedRows([(NodePool, "p")], _POOL_VISIBLE_SQL, prepared=True)
MAX_ID = 2**63 - 1  # bigint: a larger id cannot exist, and must not reach the database


def pool_visible_to(user: User, pool_id: int) -> NodePool | None:
    """The pool `pool_id` if `user` may see it (pools_visible_to's rule), else None; one prepared
    statement (_POOL_VISIBLE), without the instance type."""
    if not 0 < pool_id <= MAX_ID:
        return None
    rows = _POOL_VISIBLE.fetch(
        {"pool": pool_id, "site_admin": user.is_site_admin, "user": user.pk or 0}
    )
    return rows[0][0] if rows else None
