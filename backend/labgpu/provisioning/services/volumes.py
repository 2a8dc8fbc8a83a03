"""Persistent volumes: find-or-create an owner's volume for a node, attach it at create, and
detach it (confirmed) before the droplet is destroyed.

Every step is idempotent and safe to kill midway: the provider name is deterministic (one name
per region is DigitalOcean's rule, so a retried create finds the volume), attach happens in the
droplet create itself (`volumes: [id]`, adopted with the droplet on a retry), and a teardown that
dies between detach and destroy re-reads the provider's `droplet_ids` before doing anything.
"""

from __future__ import annotations

import logging
import time
from datetime import datetime
from decimal import Decimal

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils.translation import gettext as _

from labgpu.accounts.models import Lab, Membership
from labgpu.audit.services import audit_record
from labgpu.bookings import notifications
from labgpu.bookings.models import Booking
from labgpu.catalog.models import NodePool, ProviderAccount
from labgpu.core.crashpoints import crash_point
from labgpu.core.errors import ApplicationError, Conflict
from labgpu.core.timeutils import now
from labgpu.providers import (
    ProviderDriver,
    ProviderError,
    ProviderNotFound,
    ProviderTransientError,
    VolumeSpec,
    volume_name,
)
from labgpu.provisioning.drivers import driver_for
from labgpu.provisioning.models import LabVolumeSize, Node, UntrackedVolume, Volume
from labgpu.provisioning.selectors import volume_payer
from labgpu.usage.models import StorageUsage
from labgpu.usage.services import storage_record

logger = logging.getLogger(__name__)

VolumeState = Volume.State


class VolumeBusy(ProviderTransientError):
    """The owner's volume is still attached to another droplet (its node is being torn down)."""


class VolumeDetachFailed(ProviderTransientError):
    """The provider's detach action errored or did not finish; the droplet is NOT destroyed."""


def volume_size_for(lab: Lab) -> int:
    """The size new volumes of `lab` get: the lab admin's setting, within the site's limit."""
    chosen = (
        LabVolumeSize.objects.filter(lab=lab).values_list("size_gb", flat=True).first()
        or settings.LABGPU_VOLUME_DEFAULT_GB
    )
    return max(1, min(int(chosen), settings.LABGPU_VOLUME_MAX_GB))


def lab_volume_size_set(*, lab: Lab, size_gb: int) -> LabVolumeSize:
    """A lab admin's size for new volumes; refused above the site admin's limit."""
    limit = settings.LABGPU_VOLUME_MAX_GB
    if not 1 <= size_gb <= limit:
        raise ApplicationError(
            _("The volume size must be between 1 and %(limit)s GB (the site's limit).")
            % {"limit": limit},
            code="volume_size_out_of_range",
            field="size_gb",
        )
    setting, _created = LabVolumeSize.objects.update_or_create(
        lab=lab, defaults={"size_gb": size_gb}
    )
    return setting


def _owner(booking: Booking) -> tuple[str, int, dict[str, object]]:
    if booking.pool.volume_scope == NodePool.VolumeScope.LAB:
        return "lab", booking.lab_id, {"owner_lab_id": booking.lab_id}
    return "user", booking.user_id, {"owner_user_id": booking.user_id}


def volume_ensure_for_node(*, node: Node, driver: ProviderDriver) -> Volume | None:
    """The owner's volume in the node's region, created on first use; None when the pool has none.

    Raises VolumeBusy while the volume is still attached to a droplet that is not this node's
    (the previous booking's node is being torn down): the provision retries later.
    """
    booking = node.booking
    if booking.pool.volume_scope == NodePool.VolumeScope.NONE:
        return None
    kind, owner_id, owner = _owner(booking)
    name = volume_name(owner_kind=kind, owner_id=owner_id, region=node.region)  # type: ignore[arg-type]
    size_gb = min(volume_size_for(booking.lab), booking.pool.volume_limit_gb)
    volume = _volume_row(node=node, name=name, owner=owner, size_gb=size_gb)
    if not volume.provider_id:
        made = driver.create_volume(
            VolumeSpec(name=name, region=node.region, size_gb=volume.size_gb)
        )
        crash_point("volume.after_create")
        Volume.objects.filter(pk=volume.pk, provider_id="").update(
            provider_id=made.id, state=VolumeState.AVAILABLE, updated_at=now()
        )
        volume.refresh_from_db()
    remote = driver.get_volume(volume.provider_id)
    for droplet_id in remote.droplet_ids:
        if node.provider_id == str(droplet_id):
            continue
        try:
            holder = driver.get(droplet_id)
        except ProviderNotFound:
            continue  # gone a moment ago; the provider releases its volumes
        if holder.node_id != node.pk:
            raise VolumeBusy(
                f"volume {volume.name} is still attached to droplet {droplet_id}",
                retry_after=10 * settings.TIME_SCALE,
            )
    return volume


def _volume_row(*, node: Node, name: str, owner: dict[str, object], size_gb: int) -> Volume:
    live = Volume.objects.exclude(state=VolumeState.DELETED)
    lookup = {"provider_account_id": node.provider_account_id, "region": node.region, "name": name}
    existing = live.filter(**lookup).first()
    if existing is not None:
        return existing
    try:
        with transaction.atomic():
            return Volume.objects.create(
                **lookup, **owner, size_gb=size_gb, pool_id=node.booking.pool_id
            )
    except IntegrityError:  # another worker made the row first
        return live.get(**lookup)


def volume_record_attached(*, node: Node) -> int:
    """The node's droplet was created (or adopted) with the volume: record the attachment."""
    name = _node_volume_name(node)
    if name is None:
        return 0
    return (
        Volume.objects.filter(
            provider_account_id=node.provider_account_id,
            region=node.region,
            name=name,
            state__in=[VolumeState.AVAILABLE, VolumeState.ATTACHED],
        )
        .exclude(attached_node_id=node.pk)
        .update(
            state=VolumeState.ATTACHED,
            attached_node_id=node.pk,
            last_attached_node_id=node.pk,
            updated_at=now(),
        )
    )


def _node_volume_name(node: Node) -> str | None:
    booking = node.booking
    if booking.pool.volume_scope == NodePool.VolumeScope.NONE:
        return None
    kind, owner_id, _ = _owner(booking)
    return volume_name(owner_kind=kind, owner_id=owner_id, region=node.region)  # type: ignore[arg-type]


def volume_release(*, node: Node, driver: ProviderDriver, droplet_id: int) -> None:
    """Detach our volume from `droplet_id` and wait until the provider confirms it.

    Called by teardown before the destroy. Reads the provider's `droplet_ids`, not our row, so a
    worker killed anywhere in here (or between here and the destroy) simply detaches again or
    finds nothing to do. Raises VolumeDetachFailed (retry; the droplet stays) when the action
    errors or does not finish in time.
    """
    volume = (
        Volume.objects.filter(
            provider_account_id=node.provider_account_id,
            region=node.region,
            name=_node_volume_name(node) or "",
        )
        .exclude(state=VolumeState.DELETED)
        .first()
    )
    if volume is None or not volume.provider_id:
        return
    Volume.objects.filter(pk=volume.pk, state=VolumeState.ATTACHED).update(
        state=VolumeState.DETACHING, updated_at=now()
    )
    if droplet_id in driver.get_volume(volume.provider_id).droplet_ids:
        _power_down(driver, droplet_id)
        crash_point("teardown.after_shutdown")
    action = driver.detach_volume(volume.provider_id, droplet_id)
    crash_point("teardown.after_detach_request")
    if action is not None:
        deadline = time.monotonic() + settings.LABGPU_VOLUME_ACTION_WAIT_S
        while action.status == "in-progress" and time.monotonic() < deadline:
            time.sleep(0.2)
            action = driver.volume_action(volume.provider_id, action.id)
        if action.status != "completed":
            raise VolumeDetachFailed(
                f"detach of volume {volume.name} from droplet {droplet_id}: {action.status}",
                retry_after=15 * settings.TIME_SCALE,
            )
    if droplet_id in driver.get_volume(volume.provider_id).droplet_ids:
        raise VolumeDetachFailed(f"volume {volume.name} still shows droplet {droplet_id}")
    Volume.objects.filter(pk=volume.pk).exclude(state=VolumeState.DELETED).update(
        state=VolumeState.AVAILABLE, attached_node=None, updated_at=now()
    )
    crash_point("teardown.after_detach")


def _power_down(driver: ProviderDriver, droplet_id: int) -> None:
    """Shut the droplet down so its `labgpu-data` unit syncs and unmounts /data (cloud-init's
    shutdown hook); a droplet that does not stop in time is powered off (DigitalOcean's advice:
    "attempt a shutdown, with a reasonable timeout, followed by a power_off action")."""
    for graceful in (True, False):
        try:
            if driver.get(droplet_id).status != "active":
                return  # off already, or never booted (nothing was mounted)
        except ProviderNotFound:
            return
        driver.power_down(droplet_id, graceful=graceful)
        deadline = time.monotonic() + settings.LABGPU_VOLUME_SHUTDOWN_WAIT_S
        while time.monotonic() < deadline:
            time.sleep(0.2)
            try:
                if driver.get(droplet_id).status == "off":
                    return
            except ProviderNotFound:
                return
        logger.warning("droplet %s did not shut down in time; powering off", droplet_id)
    raise VolumeDetachFailed(f"droplet {droplet_id} is still running; detach later")


GIB = 2**30
#: Used space must fall this many points under the threshold to re-arm the warning, so a disk
#: hovering at the line (or an agent flipping its numbers: the researcher has root) does not warn
#: on every heartbeat.
NEAR_FULL_REARM_POINTS = 5


def volume_usage_record(*, node: Node, used_bytes: int, total_bytes: int) -> Volume | None:
    """Store how full `/data` is on `node` and tell the owner once when it crosses
    LABGPU_VOLUME_NEAR_FULL_PCT; None when the node has no volume attached.

    The numbers come from the node's agent (validated by `health.limits.check_data_usage`, I-9);
    `used_gb` is never stored above the volume's size. One crossing notifies once: a CAS on
    `near_full_at` (parallel heartbeats cannot both win), cleared when the disk falls back
    NEAR_FULL_REARM_POINTS under the threshold. A steady heartbeat costs one SELECT and one UPDATE.
    """
    volume = Volume.objects.filter(attached_node_id=node.pk, state=VolumeState.ATTACHED).first()
    if volume is None:
        return None
    used_gb = min(Decimal(used_bytes) / GIB, Decimal(volume.size_gb)).quantize(Decimal("0.01"))
    percent = used_bytes * 100 / total_bytes
    at = now()
    Volume.objects.filter(pk=volume.pk).update(used_gb=used_gb, used_at=at)
    threshold = settings.LABGPU_VOLUME_NEAR_FULL_PCT
    if percent >= threshold and volume.near_full_at is None:
        if Volume.objects.filter(pk=volume.pk, near_full_at__isnull=True).update(near_full_at=at):
            volume.near_full_at = at
            _notify_near_full(volume=volume, node=node, percent=int(percent))
    elif percent < threshold - NEAR_FULL_REARM_POINTS and volume.near_full_at is not None:
        Volume.objects.filter(pk=volume.pk).update(near_full_at=None)
        volume.near_full_at = None
    volume.used_gb, volume.used_at = used_gb, at
    return volume


def _notify_near_full(*, volume: Volume, node: Node, percent: int) -> None:
    """A user's volume: its owner. A lab's: the lab's admins and the user whose node filled it
    (in the app and by e-mail), and chat to the lab's and that user's channels."""
    user = volume.owner_user
    if user is None:
        user = node.booking.user
        admins = Membership.objects.filter(
            lab_id=volume.owner_lab_id, role=Membership.Role.LAB_ADMIN
        ).select_related("user")
        recipients = [user] + [m.user for m in admins if m.user_id != user.pk]
    else:
        recipients = [user]
    notifications.volume_near_full(
        volume=volume.name,
        region=volume.region,
        size_gb=volume.size_gb,
        percent=percent,
        lab=volume.owner_lab,
        recipients=recipients,
    )


def volume_in_use(volume: Volume) -> bool:
    """A booking uses it: a live node has it, or a booking of its owner in its pool region runs."""
    if volume.attached_node_id is not None:
        return True
    live = Node.objects.filter(
        region=volume.region,
        status__in=Node.LIVE_STATUSES,
        provider_account=volume.provider_account,
    )
    if volume.owner_user_id:
        live = live.filter(booking__user_id=volume.owner_user_id)
    else:
        live = live.filter(booking__lab_id=volume.owner_lab_id)
    return live.exclude(booking__pool__volume_scope=NodePool.VolumeScope.NONE).exists()


def volume_delete(*, volume: Volume, driver: ProviderDriver | None) -> None:
    """Delete a volume and its data; refused while a booking uses it."""
    with transaction.atomic():
        locked = Volume.objects.select_for_update().get(pk=volume.pk)
        if locked.state == VolumeState.DELETED:
            return
        if volume_in_use(locked):
            raise Conflict(
                _("This volume is in use by a booking; delete it after the booking ends."),
                code="volume_in_use",
            )
        Volume.objects.filter(pk=locked.pk).update(state=VolumeState.DELETING, updated_at=now())
    if locked.provider_id:
        if driver is None:
            raise ValueError("a volume made at the provider needs a driver to delete it")
        driver.delete_volume(locked.provider_id)
    Volume.objects.filter(pk=locked.pk).update(
        state=VolumeState.DELETED, deleted_at=now(), updated_at=now()
    )


def volumes_reconcile(*, account: ProviderAccount, driver: ProviderDriver) -> int:
    """Compare the provider's tagged volumes with ours; returns how many are untracked.

    A volume whose create answered but whose id was never recorded (a worker killed at
    `volume.after_create`) is adopted by its deterministic name. Anything else with our tag is
    reported to site admins (an `UntrackedVolume` row and an audit entry), never deleted.
    """
    remote = driver.list_volumes()
    tracked = set(
        Volume.objects.filter(provider_account=account)
        .exclude(state=VolumeState.DELETED)
        .exclude(provider_id="")
        .values_list("provider_id", flat=True)
    )
    seen_at = now()
    untracked = 0
    for volume in remote:
        if volume.id in tracked:
            continue
        adopted = Volume.objects.filter(
            provider_account=account,
            region=volume.region,
            name=volume.name,
            provider_id="",
            state=VolumeState.CREATING,
        ).update(provider_id=volume.id, state=VolumeState.AVAILABLE, updated_at=seen_at)
        if adopted:
            continue
        untracked += 1
        _, created = UntrackedVolume.objects.update_or_create(
            provider_account=account,
            provider_id=volume.id,
            defaults={
                "name": volume.name,
                "region": volume.region,
                "size_gb": volume.size_gb,
                "last_seen_at": seen_at,
                "resolved_at": None,
            },
        )
        if created:
            logger.warning("reconcile: untracked volume %s (%s)", volume.id, volume.name)
            audit_record(
                actor=None,
                action="volume.untracked",
                target=account,
                data={"provider_id": volume.id, "name": volume.name, "region": volume.region},
            )
    listed = {v.id for v in remote}
    UntrackedVolume.objects.filter(provider_account=account, resolved_at__isnull=True).exclude(
        provider_id__in=listed
    ).update(resolved_at=seen_at)
    UntrackedVolume.objects.filter(
        provider_account=account, provider_id__in=tracked, resolved_at__isnull=True
    ).update(resolved_at=seen_at)
    return untracked


def _payer(volume: Volume) -> tuple[int | None, int | None]:
    return volume_payer(volume)


def volumes_meter(*, until: datetime | None = None) -> int:
    """Meter every volume's storage (GB-months) up to `until` (or its deletion); idempotent."""
    until = until or now()
    metered = 0
    volumes = (
        Volume.objects.exclude(provider_id="")
        .select_related("last_attached_node__booking")
        .order_by("pk")
    )
    for volume in volumes:
        if meter_volume(volume, until=until):
            metered += 1
    return metered


def meter_volume(volume: Volume, *, until: datetime, grow_accepted: bool = False) -> bool:
    """Meter one volume at its current size up to `until` (its deletion, or while a grow waits
    for the provider, the moment it was asked for, unless `grow_accepted`: the caller records
    the acceptance and meters up to it); whether anything was recorded.

    Repeats until the records reach the end: a parallel run may have recorded a shorter period
    from the same start (the unique start keeps one), and the rest is still at this size.
    """
    end = min(until, volume.deleted_at) if volume.deleted_at else until
    if volume.resize_requested_at is not None and not grow_accepted:
        end = min(end, volume.resize_requested_at)
    lab_id, user_id = _payer(volume)
    if lab_id is None:
        return False
    recorded = False
    # Each call records one piece at the volume price in force (labgpu.pricing cuts at a change).
    while storage_record(
        volume=volume,
        lab_id=lab_id,
        user_id=user_id,
        region=volume.region,
        size_gb=volume.size_gb,
        since=volume.created_at,
        until=end,
    ):
        recorded = True
    return recorded


def volume_storage_cost(volume: Volume) -> Decimal:
    """What the volume's storage has cost so far (metered periods)."""
    total = sum((u.cost for u in StorageUsage.objects.filter(volume=volume)), Decimal(0))
    return total.quantize(Decimal("0.01"))


def volumes_in_use_ids(volumes: list[Volume]) -> set[int]:
    """The ids of `volumes` a booking uses (cannot be deleted now)."""
    return {volume.pk for volume in volumes if volume_in_use(volume)}


def volume_delete_as(*, actor: object, volume: Volume) -> None:
    """The API's delete: refused while in use; the provider's refusal becomes a clear error."""
    try:
        if not volume.provider_id and volume.state == VolumeState.CREATING:
            # its create may have reached the provider (a worker killed before recording it):
            # look for it by its name, so deleting the row never leaves the disk behind
            with driver_for(volume.provider_account) as driver:
                made = driver.find_volume(volume.name, volume.region)
                if made is not None:
                    Volume.objects.filter(pk=volume.pk, provider_id="").update(provider_id=made.id)
                    volume.refresh_from_db()
                volume_delete(volume=volume, driver=driver)
        elif not volume.provider_id:
            volume_delete(volume=volume, driver=None)  # never made at the provider
        else:
            with driver_for(volume.provider_account) as driver:
                volume_delete(volume=volume, driver=driver)
    except ProviderError as error:
        raise ApplicationError(
            _("The provider did not delete the volume: %(message)s") % {"message": error.message},
            code="provider_error",
            status_code=502,
        ) from error
    audit_record(
        actor=actor,
        action="volume.deleted",
        target=volume,
        lab=volume.owner_lab,
        data={"name": volume.name, "region": volume.region, "size_gb": volume.size_gb},
    )
