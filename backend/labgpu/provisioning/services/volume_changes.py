"""A researcher's own volume changes: create one in a pool's region, grow it, and the provider
steps that carry them out (tasks `create_volume`, `resize_volume`).

The request (the API) checks the rules and records the wish under the volume's row lock; a worker
then calls the provider. Each step is safe to run twice: a create goes by the volume's
deterministic name (a second create adopts the first), a grow compares the provider's size with
the size asked for before it asks again.

Metering follows the provider: a grow bills the old size up to the moment the provider accepted
it (the resize action's `started_at`, which the provider states to the second; never before the
request) and the new size from then on. While a grow waits for the
provider, `volumes_meter` stops at `resize_requested_at` (acceptance comes later), and the step
that records the acceptance meters the old size up to it under the row lock before it changes the
size, so no period is billed at the wrong size.
"""

from __future__ import annotations

import logging
from datetime import datetime

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils.translation import gettext as _

from labgpu.accounts.models import Lab, User
from labgpu.accounts.selectors import lab_ids_of
from labgpu.audit.services import audit_record
from labgpu.catalog.models import NodePool
from labgpu.core.errors import ApplicationError, Conflict
from labgpu.core.timeutils import now
from labgpu.providers import (
    ProviderDriver,
    ProviderPermanentError,
    VolumeSpec,
    volume_name,
)
from labgpu.provisioning.dispatch import enqueue_volume_on_commit
from labgpu.provisioning.drivers import driver_for
from labgpu.provisioning.models import Volume
from labgpu.provisioning.services.volumes import meter_volume

logger = logging.getLogger(__name__)

VolumeState = Volume.State
#: states in which a volume may grow (DigitalOcean resizes attached volumes too)
GROWABLE = (VolumeState.AVAILABLE, VolumeState.ATTACHED)


def volume_limit_gb(volume: Volume) -> int:
    """The largest size `volume` may grow to: its pool's limit, else the site's."""
    return volume.pool.volume_limit_gb if volume.pool else settings.LABGPU_VOLUME_MAX_GB


def _check_size(size_gb: int, limit: int) -> None:
    if not 1 <= size_gb <= limit:
        raise ApplicationError(
            _("The volume size must be between 1 and %(limit)s GB (the pool's limit).")
            % {"limit": limit},
            code="volume_size_out_of_range",
            field="size_gb",
        )


@transaction.atomic
def volume_create_request(
    *,
    actor: User,
    pool: NodePool,
    size_gb: int,
    region: str | None = None,
    lab: Lab | None = None,
) -> Volume:
    """A researcher's new volume in one of `pool`'s regions, made at the provider by a worker.

    The owner is the actor, or `lab` in a pool whose volumes belong to labs. One live volume per
    owner and region (the provider name is per owner and region): a second is refused with 409.
    """
    if pool.volume_scope == NodePool.VolumeScope.NONE:
        raise ApplicationError(
            _("This pool offers no persistent volumes."), code="pool_has_no_volumes", field="pool"
        )
    region = region or pool.region
    if region not in pool.regions:
        raise ApplicationError(
            _("Choose one of the pool's regions: %(regions)s.")
            % {"regions": ", ".join(pool.regions)},
            code="volume_region_not_in_pool",
            field="region",
        )
    _check_size(size_gb, pool.volume_limit_gb)
    if pool.volume_scope == NodePool.VolumeScope.LAB:
        if lab is None:
            raise ApplicationError(
                _("Choose the lab that owns the volume."), code="lab_required", field="lab"
            )
        if lab.pk not in lab_ids_of(actor):
            raise ApplicationError(
                _("You are not a member of this lab."), code="not_a_member", field="lab"
            )
        owner: dict[str, object] = {"owner_lab": lab}
        name = volume_name(owner_kind="lab", owner_id=lab.pk, region=region)
    else:
        owner = {"owner_user": actor}
        name = volume_name(owner_kind="user", owner_id=actor.pk, region=region)
    account_id = pool.instance_type.provider_account_id
    taken = _("There already is a volume for this owner in %(region)s; grow it instead.") % {
        "region": region
    }
    live = Volume.objects.exclude(state=VolumeState.DELETED)
    if live.filter(provider_account_id=account_id, region=region, name=name).exists():
        raise Conflict(taken, code="volume_exists", field="region")
    try:
        with transaction.atomic():
            volume = Volume.objects.create(
                provider_account_id=account_id,
                region=region,
                name=name,
                size_gb=size_gb,
                pool=pool,
                **owner,
            )
    except IntegrityError as error:  # a parallel request made it first
        raise Conflict(taken, code="volume_exists", field="region") from error
    audit_record(
        actor=actor,
        action="volume.created",
        target=volume,
        lab=lab,
        data={"name": name, "region": region, "size_gb": size_gb, "pool": pool.slug},
    )
    enqueue_volume_on_commit("create_volume", volume.pk)
    return volume


def volume_provision(*, volume_id: int) -> None:
    """Task step: create the volume at the provider (or adopt the one a killed run created).

    Holds the row lock across the call, so a delete waits for the id it must delete instead of
    leaving the provider's volume behind; a delete that came first leaves nothing to create.
    """
    volume = Volume.objects.select_related("provider_account").filter(pk=volume_id).first()
    if volume is None:
        return
    with driver_for(volume.provider_account) as driver, transaction.atomic():
        locked = Volume.objects.select_for_update().get(pk=volume_id)
        if locked.state != VolumeState.CREATING or locked.provider_id:
            return
        try:
            made = driver.create_volume(
                VolumeSpec(name=locked.name, region=locked.region, size_gb=locked.size_gb)
            )
        except ProviderPermanentError as error:
            # the provider refused for good (a region without block storage, the account's
            # volume limit): the owner sees why, and nothing exists to meter or delete
            Volume.objects.filter(pk=locked.pk).update(
                state=VolumeState.DELETED,
                deleted_at=now(),
                last_error=error.message[:300],
                updated_at=now(),
            )
            audit_record(
                actor=None,
                action="volume.create_refused",
                target=locked,
                lab=locked.owner_lab,
                data={"name": locked.name, "message": error.message[:300]},
            )
            return
        Volume.objects.filter(pk=locked.pk).update(
            provider_id=made.id, state=VolumeState.AVAILABLE, last_error="", updated_at=now()
        )


@transaction.atomic
def volume_resize_request(*, actor: User, volume: Volume, size_gb: int) -> Volume:
    """Grow `volume` to `size_gb` (never shrink: DigitalOcean resizes volumes upwards only),
    within its pool's limit; a worker asks the provider."""
    locked = Volume.objects.select_for_update(of=("self",)).select_related("pool").get(pk=volume.pk)
    if locked.state not in GROWABLE or not locked.provider_id:
        raise Conflict(
            _("The volume is being created, detached or deleted; try again in a minute."),
            code="volume_busy",
        )
    if locked.resize_to_gb is not None:
        raise Conflict(
            _("The volume is already growing to %(size)s GB.") % {"size": locked.resize_to_gb},
            code="volume_resize_pending",
        )
    if size_gb <= locked.size_gb:
        raise ApplicationError(
            _("A volume can only grow: choose more than %(size)s GB.") % {"size": locked.size_gb},
            code="volume_shrink",
            field="size_gb",
        )
    _check_size(size_gb, volume_limit_gb(locked))
    Volume.objects.filter(pk=locked.pk).update(
        resize_to_gb=size_gb, resize_requested_at=now(), last_error="", updated_at=now()
    )
    audit_record(
        actor=actor,
        action="volume.resize_requested",
        target=locked,
        lab=locked.owner_lab,
        data={"name": locked.name, "from_gb": locked.size_gb, "to_gb": size_gb},
    )
    enqueue_volume_on_commit("resize_volume", locked.pk)
    locked.refresh_from_db()
    return locked


def volume_resize_apply(*, volume_id: int) -> None:
    """Task step: ask the provider to grow the volume and record when it accepted.

    A run killed after the provider accepted finds the provider's size already grown and reads
    the acceptance time from the volume's resize action, so a retry neither asks twice nor
    bills the new size from the wrong moment.
    """
    volume = Volume.objects.select_related("provider_account").filter(pk=volume_id).first()
    if volume is None or volume.resize_to_gb is None or not volume.provider_id:
        return
    if volume.state in (VolumeState.DELETING, VolumeState.DELETED):
        return  # deleted while the grow waited: nothing left to grow
    target = volume.resize_to_gb
    with driver_for(volume.provider_account) as driver:
        if driver.get_volume(volume.provider_id).size_gb >= target:
            accepted_at = _resize_accepted_at(driver, volume.provider_id)
        else:
            try:
                action = driver.resize_volume(volume.provider_id, target)
            except ProviderPermanentError as error:
                _resize_refused(volume, error.message)
                return
            accepted_at = action.started_at or now()
    _resize_record(volume_id=volume_id, size_gb=target, accepted_at=accepted_at)


def _resize_accepted_at(driver: ProviderDriver, provider_id: str) -> datetime:
    for action in driver.list_volume_actions(provider_id):  # newest first
        if "resize" in action.type and action.started_at is not None:
            return action.started_at
    return now()  # no record of it: bill the new size from now, never earlier


@transaction.atomic
def _resize_record(*, volume_id: int, size_gb: int, accepted_at: datetime) -> None:
    locked = Volume.objects.select_for_update().get(pk=volume_id)
    if locked.resize_to_gb != size_gb:
        return  # recorded already by another run
    if locked.resize_requested_at is not None:
        # the provider states times to the second ("2020-11-12T17:51:03Z"), and it accepted
        # after we asked: never before the request
        accepted_at = max(accepted_at, locked.resize_requested_at)
    # the old size, up to the acceptance
    meter_volume(locked, until=accepted_at, grow_accepted=True)
    old = locked.size_gb
    Volume.objects.filter(pk=locked.pk).update(
        size_gb=size_gb, resize_to_gb=None, resize_requested_at=None, updated_at=now()
    )
    audit_record(
        actor=None,
        action="volume.resized",
        target=locked,
        lab=locked.owner_lab,
        data={"name": locked.name, "from_gb": old, "to_gb": size_gb, "at": accepted_at.isoformat()},
    )


@transaction.atomic
def _resize_refused(volume: Volume, message: str) -> None:
    Volume.objects.filter(pk=volume.pk).update(
        resize_to_gb=None, resize_requested_at=None, last_error=message[:300], updated_at=now()
    )
    audit_record(
        actor=None,
        action="volume.resize_refused",
        target=volume,
        lab=volume.owner_lab,
        data={"name": volume.name, "to_gb": volume.resize_to_gb, "message": message[:300]},
    )
