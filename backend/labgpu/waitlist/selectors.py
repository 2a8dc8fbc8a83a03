"""Reads about waitlist entries; visibility decided here once (I-6)."""

from django.db.models import Q, QuerySet

from labgpu.accounts.models import User
from labgpu.accounts.selectors import admin_lab_ids_of
from labgpu.waitlist.models import WaitlistEntry


def entries_visible_to(user: User) -> QuerySet[WaitlistEntry]:
    """Site admins see every entry, lab admins their labs', everyone else their own."""
    entries = WaitlistEntry.objects.select_related("lab", "pool", "booking")
    if user.is_site_admin:
        return entries
    return entries.filter(Q(user=user) | Q(lab_id__in=admin_lab_ids_of(user)))


def entry_position(entry: WaitlistEntry) -> int | None:
    """A waiting entry's place in line (1: next to be offered) among the waiting entries that
    want its pool (by the pool or by its GPU model) or its GPU model; None when not waiting."""
    if entry.status != WaitlistEntry.Status.WAITING:
        return None
    ahead = WaitlistEntry.objects.filter(status=WaitlistEntry.Status.WAITING, pk__lt=entry.pk)
    if entry.pool_id is not None:
        model = entry.pool.instance_type.gpu_model if entry.pool else ""
        ahead = ahead.filter(Q(pool_id=entry.pool_id) | Q(pool=None, gpu_model__iexact=model))
    else:
        ahead = ahead.filter(
            Q(gpu_model__iexact=entry.gpu_model)
            | Q(pool__instance_type__gpu_model__iexact=entry.gpu_model)
        )
    return ahead.count() + 1
