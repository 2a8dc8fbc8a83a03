"""Writes for calendar feeds: create (returns the secret once) and revoke."""

import secrets

from django.db import transaction
from django.utils.translation import gettext as _

from labgpu.accounts.models import ApiToken, User
from labgpu.accounts.services import hash_token
from labgpu.catalog.models import NodePool
from labgpu.catalog.selectors import pools_visible_to
from labgpu.core.errors import ApplicationError
from labgpu.core.timeutils import now
from labgpu.feeds.models import CalendarFeed

FEED_PREFIX = "lgf_"


@transaction.atomic
def feed_create(
    *, user: User, kind: str, pool: NodePool | None = None, token: ApiToken | None = None
) -> tuple[CalendarFeed, str]:
    """Create a subscription feed; returns it with the raw secret, which is never stored.

    `token`: the API token the request came with; the feed then dies with that token."""
    if kind == CalendarFeed.Kind.USER:
        if pool is not None:
            raise ApplicationError(
                _("A feed of your bookings takes no pool."), code="invalid", field="pool"
            )
    elif kind == CalendarFeed.Kind.POOL:
        if pool is None:
            raise ApplicationError(_("Pick the pool to follow."), code="required", field="pool")
        if not pools_visible_to(user).filter(pk=pool.pk).exists():
            # As the serializer answers an unknown id: a hidden pool reads as one that is not.
            raise ApplicationError(
                _('Invalid pk "%(pk)s" - object does not exist.') % {"pk": pool.pk},
                code="does_not_exist",
                field="pool",
            )
    else:
        raise ApplicationError(
            _("Unknown feed kind: %(kind)s.") % {"kind": kind}, code="invalid", field="kind"
        )
    prefix = secrets.token_hex(4)
    raw = f"{FEED_PREFIX}{prefix}_{secrets.token_urlsafe(32)}"
    feed = CalendarFeed.objects.create(
        user=user,
        kind=kind,
        pool=pool,
        created_by_token=token,
        prefix=prefix,
        secret_hash=hash_token(raw),
    )
    return feed, raw


def feed_revoke(*, feed: CalendarFeed) -> None:
    """Revoke at once; revoking twice is harmless."""
    CalendarFeed.objects.filter(pk=feed.pk, revoked_at__isnull=True).update(revoked_at=now())
