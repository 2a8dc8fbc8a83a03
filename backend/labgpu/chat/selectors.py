from django.db.models import Q, QuerySet

from labgpu.accounts.models import User
from labgpu.accounts.selectors import admin_lab_ids_of
from labgpu.chat.models import ChatChannel, ChatDelivery


def channels_visible_to(user: User) -> QuerySet[ChatChannel]:
    """A user's own channels and those of the labs they administer (every lab's for site
    admins)."""
    if user.is_site_admin:
        return ChatChannel.objects.filter(Q(user=user) | Q(lab__isnull=False))
    return ChatChannel.objects.filter(Q(user=user) | Q(lab_id__in=admin_lab_ids_of(user)))


def deliveries_of(channel: ChatChannel, *, limit: int = 50) -> QuerySet[ChatDelivery]:
    return channel.deliveries.order_by("-created_at", "-pk")[:limit]
