from django.db.models import Prefetch, QuerySet, prefetch_related_objects

from labgpu.accounts.models import Lab, Membership, User


def labs_visible_to(user: User) -> QuerySet[Lab]:
    if user.is_site_admin:
        return Lab.objects.all()
    return Lab.objects.filter(memberships__user=user).distinct()


def lab_ids_of(user: User) -> set[int]:
    return set(Membership.objects.filter(user=user).values_list("lab_id", flat=True))


def admin_lab_ids_of(user: User) -> set[int]:
    return set(
        Membership.objects.filter(user=user, role=Membership.Role.LAB_ADMIN).values_list(
            "lab_id", flat=True
        )
    )


def is_lab_admin(user: User, lab_id: int) -> bool:
    return user.is_site_admin or lab_id in admin_lab_ids_of(user)


def user_with_labs(user: User) -> User:
    """`user` with its memberships and their labs loaded in one query (what `/me/` shows)."""
    prefetch_related_objects(
        [user], Prefetch("memberships", queryset=Membership.objects.select_related("lab"))
    )
    return user
