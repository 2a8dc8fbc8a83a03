"""Node steps: create (or adopt) a node's droplet, watch it boot, drain, destroy, fail, replace.

Each step is a task's body (provisioning/tasks.py), safe to run twice. Provider-facing steps hold
the node's short provider lease. Follow-up work is enqueued by task name (`dispatch`), never by
importing the tasks.
"""

import logging
import math
import secrets
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import datetime, timedelta

from django.conf import settings
from django.core.cache import cache
from django.db import connection, transaction
from django.db.models import F, Q

from labgpu.audit.services import audit_record
from labgpu.bookings import notifications
from labgpu.bookings.models import Booking
from labgpu.bookings.services import capacity_freed, pool_lock
from labgpu.catalog.models import ProviderAccount
from labgpu.core.crashpoints import crash_point
from labgpu.core.reasons import reason as stored_reason
from labgpu.core.timeutils import now
from labgpu.core.transitions import transition
from labgpu.providers import (
    Droplet,
    DropletSpec,
    ProviderDriver,
    ProviderNoCapacity,
    ProviderNotFound,
    ProviderPermanentError,
    ProviderTransientError,
    create_or_adopt,
    node_tag,
)
from labgpu.providers.cloudinit import render_user_data
from labgpu.provisioning.dispatch import enqueue_on_commit
from labgpu.provisioning.drivers import driver_for
from labgpu.provisioning.models import Node, Volume
from labgpu.provisioning.services.agent import node_ready_if_usable
from labgpu.provisioning.services.volumes import (
    volume_ensure_for_node,
    volume_record_attached,
    volume_release,
)
from labgpu.provisioning.tokens import bootstrap_token_for, hash_secret
from labgpu.usage.models import UsageRecord
from labgpu.usage.services import booking_meter, usage_record_droplet

logger = logging.getLogger(__name__)
BookingStatus = Booking.Status
NodeStatus = Node.Status
MAX_ATTEMPTS = 2  # the first node, and one replacement (I-5)
# Where a node's agent can move it before provisioning has recorded the droplet's id.
ALIVE_AFTER_CREATE = [NodeStatus.BOOTING, NodeStatus.CHECKING, NodeStatus.READY]


def node_request(*, booking: Booking, attempt: int) -> Node:
    instance_type = booking.pool.instance_type
    node = Node.objects.create(
        booking=booking,
        attempt=attempt,
        provider_account=instance_type.provider_account,
        region=booking.pool.region,
        size=instance_type.provider_size,
        image=instance_type.image,
        status=NodeStatus.REQUESTED,
        status_changed_at=now(),
    )
    Node.objects.filter(pk=node.pk).update(
        bootstrap_token_hash=hash_secret(bootstrap_token_for(node.pk))
    )
    audit_record(
        actor=None,
        action="node.request",
        target=node,
        lab=booking.lab,
        data={"booking": booking.pk, "attempt": attempt},
    )
    enqueue_on_commit("provision_node", node.pk)
    return node


_current_lease: ContextVar[str] = ContextVar("labgpu_node_lease", default="")


class LeaseLost(ProviderTransientError):
    """Our lease expired during a slow provider call; the retry lists by tag and adopts."""


@contextmanager
def _node_lease(node_id: int) -> Iterator[bool]:
    """Hold the node's provider lease for the block; yields False when another worker has it.

    The lease is short (LABGPU_PROVIDER_LEASE_S) and a thread renews it while the block runs, so
    a slow provider call keeps it, and a killed worker's lease lapses within that time instead of
    holding the node's retries and teardown up for minutes.
    """
    token = secrets.token_hex(8)
    _current_lease.set(token)
    moment = now()
    claimed = (
        Node.objects.filter(pk=node_id)
        .filter(Q(lease_until__isnull=True) | Q(lease_until__lt=moment))
        .update(
            lease_token=token,
            lease_until=moment + timedelta(seconds=settings.LABGPU_PROVIDER_LEASE_S),
        )
    )
    if not claimed:
        yield False
        return
    stop = threading.Event()
    renewer = threading.Thread(
        target=_keep_lease, args=(node_id, token, stop), name=f"lease-{node_id}", daemon=True
    )
    renewer.start()
    try:
        crash_point("lease.after_claim")
        yield True
    finally:
        stop.set()
        renewer.join()
        Node.objects.filter(pk=node_id, lease_token=token).update(lease_token="", lease_until=None)


def _keep_lease(node_id: int, token: str, stop: threading.Event) -> None:
    period = settings.LABGPU_PROVIDER_LEASE_S / 3
    try:
        while not stop.wait(period):
            Node.objects.filter(pk=node_id, lease_token=token).update(
                lease_until=now() + timedelta(seconds=settings.LABGPU_PROVIDER_LEASE_S)
            )
    finally:
        connection.close()  # this thread's own connection


def _renew_lease(node_id: int):  # type: ignore[no-untyped-def]
    """A check run right before the POST: extend our lease, or stop if another worker took it."""

    token = _current_lease.get()  # the lease this worker holds now

    def renew() -> None:
        moment = now()
        extended = Node.objects.filter(
            pk=node_id, lease_token=token, lease_until__gte=moment
        ).update(lease_until=moment + timedelta(seconds=settings.LABGPU_PROVIDER_LEASE_S))
        if not extended:
            raise LeaseLost(f"node {node_id}: lease lost before create; not creating")
        crash_point("provision.before_create_post")

    return renew


def node_provision(*, node_id: int) -> None:
    """Create (or, on a retry, adopt) the node's droplet. Transient provider errors propagate so
    the task retries; a permanent one fails the node with the provider's message."""
    with _node_lease(node_id) as mine:
        if mine:
            with _recording_provider_errors(node_id):
                _node_provision(node_id=node_id)
        else:
            logger.info("node %s: another worker is provisioning it", node_id)


def node_record_error(*, node_id: int, error: Exception) -> None:
    """Remember the provider's latest complaint, for the people waiting on the node."""
    Node.objects.filter(pk=node_id).update(
        last_error=str(error)[:1000] or type(error).__name__, last_error_at=now()
    )


@contextmanager
def _recording_provider_errors(node_id: int) -> Iterator[None]:
    try:
        yield
    except ProviderTransientError as error:
        node_record_error(node_id=node_id, error=error)
        raise


def _node_provision(*, node_id: int) -> None:
    node = Node.objects.select_related("booking__user", "booking__pool__instance_type").get(
        pk=node_id
    )
    first_try = False
    if node.status == NodeStatus.REQUESTED:
        if not transition(
            Node, pk=node.pk, from_statuses=[NodeStatus.REQUESTED], to_status=NodeStatus.CREATING
        ):
            return
        first_try = True  # no create can have happened for this node before this one
        crash_point("provision.after_creating")
    elif node.status in ALIVE_AFTER_CREATE and not node.provider_id:
        # The agent checked in before the create's answer was recorded (a worker died between):
        # the droplet exists, so adopt it now rather than leave it unmetered.
        node_adopt(node_id=node.pk)
        return
    elif node.status != NodeStatus.CREATING or node.provider_id:
        return  # already past creation, or another worker got there
    try:
        droplet, adopted = _create_in_some_region(node, first_try=first_try)
    except _GaveUp:
        return
    except ProviderPermanentError as error:
        node_fail(
            node_id=node.pk,
            reason=stored_reason("The provider refused to create the node: %(error)s", error=error),
        )
        return
    crash_point("provision.after_create_post")
    recorded = node_record_droplet(node.pk, droplet, statuses=[NodeStatus.CREATING])
    if not recorded:
        node.refresh_from_db()
        if node.provider_id == str(droplet.id):
            return  # already recorded
        if node.provider_id:
            # A second droplet for this node (a create that outlived its lease): keep the one
            # recorded, destroy this one now and meter it (I-3, I-4, I-8).
            node_destroy_stray(node=node, droplet=droplet)
            return
        # A create that answered 5xx but succeeded boots the droplet, and its agent may check in
        # (moving the node on) before this retry adopts it: record it, the node is alive.
        recorded = node_record_droplet(node.pk, droplet, statuses=ALIVE_AFTER_CREATE)
        if not recorded:
            # The node was given up meanwhile (cancelled, failed): its droplet must not outlive it.
            _node_teardown(node_id=node.pk)
            return
    crash_point("provision.after_record")
    volume_record_attached(node=node)
    logger.info("node %s: droplet %s %s", node.pk, droplet.id, "adopted" if adopted else "created")


class NoCapacityYet(ProviderTransientError):
    """No region of the pool has the size now; try again later (until start + grace)."""


def _create_in_some_region(node: Node, *, first_try: bool) -> tuple[Droplet, bool]:
    """Create the node's droplet in its region, moving on to the pool's fallback regions while
    the provider says "no capacity" (no droplet exists for a node while it moves: the region
    changes only between refused creates)."""
    regions = node.booking.pool.regions
    if node.region not in regions:
        regions = [node.region, *regions]
    while True:
        try:
            with driver_for(node.provider_account) as driver:
                # The owner's /data in this region, attached by the create itself (a retried
                # create adopts the droplet, and with it the attachment).
                volume = volume_ensure_for_node(node=node, driver=driver)
                spec = _droplet_spec(node, volume=volume)
                if first_try:
                    _renew_lease(node.pk)()
                    return driver.create(spec), False
                return create_or_adopt(driver, spec, before_create=_renew_lease(node.pk))
        except ProviderNoCapacity as error:
            later = regions[regions.index(node.region) + 1 :]
            if not later:
                _no_capacity_anywhere(node, regions=regions, error=error)
            logger.info(
                "node %s: no %s in %s; trying %s", node.pk, node.size, node.region, later[0]
            )
            audit_record(
                actor=None,
                action="node.region_fallback",
                target=node,
                data={"from": node.region, "to": later[0], "provider": error.message},
            )
            Node.objects.filter(pk=node.pk, provider_id="").update(region=later[0])
            node.region = later[0]
            first_try = False  # a refused create made nothing, but stay on the adopting path


def _no_capacity_anywhere(node: Node, *, regions: list[str], error: ProviderNoCapacity) -> None:
    """Every region refused. Wait for stock until the booking's start + the grace period; then
    fail the booking (its slot freed, nothing charged, the user told) without a replacement."""
    booking = node.booking
    deadline = booking.start + timedelta(seconds=settings.LABGPU_STOCKOUT_GRACE_S)
    Node.objects.filter(pk=node.pk, provider_id="").update(region=regions[0], updated_at=now())
    node.region = regions[0]
    if now() < deadline:
        raise NoCapacityYet(
            f"node {node.pk}: no {node.size} in {', '.join(regions)}",
            retry_after=settings.LABGPU_STOCKOUT_RETRY_S,
        )
    reason = (
        f"No GPU capacity: the provider had no {node.size} in {', '.join(regions)} "
        f"by {deadline:%Y-%m-%d %H:%M} UTC ({error.message})."
    )
    node_fail(node_id=node.pk, reason=reason, replace=False)
    raise _GaveUp(reason)


class _GaveUp(ProviderPermanentError):
    """Raised to leave the create loop once the node was failed for good (handled below)."""


def node_adopt(*, node_id: int) -> bool:
    """Record the droplet carrying the node's tag when we have none recorded (a create whose
    answer was lost). Returns whether the node now knows its droplet."""
    node = Node.objects.select_related("provider_account").get(pk=node_id)
    if node.provider_id:
        return True
    with driver_for(node.provider_account) as driver:
        found = sorted(driver.find_by_tag(node_tag(node.pk)), key=lambda d: d.id)
    if not found:
        return False
    statuses = [*ALIVE_AFTER_CREATE, NodeStatus.CREATING]
    if node_record_droplet(node.pk, found[0], statuses=statuses):
        logger.info("node %s: adopted droplet %s by its tag", node.pk, found[0].id)
    return Node.objects.filter(pk=node.pk).exclude(provider_id="").exists()


def node_record_droplet(node_id: int, droplet: Droplet, *, statuses: list[str]) -> int:
    return Node.objects.filter(pk=node_id, status__in=statuses, provider_id="").update(
        provider_id=str(droplet.id),
        provider_created_at=droplet.created_at or now(),
        public_ip=droplet.public_ipv4,
        updated_at=now(),
    )


def node_destroy_stray(*, node: Node, droplet: Droplet) -> None:
    """Destroy a droplet that is not the node's recorded one, and bill it to us, not the lab."""
    with driver_for(node.provider_account) as driver:
        driver.destroy(droplet.id)
    _meter_droplet(
        node,
        droplet_id=str(droplet.id),
        started_at=droplet.created_at or now(),
        ended_at=now(),
        charged=False,
    )
    logger.warning("node %s: destroyed stray droplet %s", node.pk, droplet.id)


def node_meter(*, node: Node) -> UsageRecord | None:
    """Meter a destroyed node's droplet: from its creation at the provider to the moment the
    provider accepted our DELETE (confirmed gone since; I-8).

    The lab pays only for a node it was handed healthy (ready, never failed); everything else is
    still recorded, at our cost, so the ledger has every droplet (I-8).
    """
    if not node.provider_id or node.provider_created_at is None or node.destroyed_at is None:
        return None  # no droplet was ever made: nothing was billed
    return _meter_droplet(
        node,
        droplet_id=node.provider_id,
        started_at=node.provider_created_at,
        ended_at=node.delete_accepted_at or node.destroyed_at,
        charged=node.ready_at is not None and node.failed_at is None,
    )


def _meter_droplet(
    node: Node, *, droplet_id: str, started_at: datetime, ended_at: datetime, charged: bool
) -> UsageRecord:
    return usage_record_droplet(
        booking=node.booking,
        node_id=node.pk,
        provider_account_id=node.provider_account_id,
        droplet_id=droplet_id,
        started_at=started_at,
        ended_at=ended_at,
        charged=charged,
    )


def booking_tag(booking_id: int) -> str:
    """The tag on every droplet of one booking: what singles it out among its type's (the demo's
    emulator sends exactly this booking's node idle by it)."""
    return f"labgpu-booking-{booking_id}"


def droplet_tags(booking: Booking) -> tuple[str, ...]:
    """The tags a node's droplet is created with (besides its own `labgpu-node-<id>`)."""
    return ("labgpu", booking_tag(booking.pk), f"labgpu-type-{booking.pool.instance_type.slug}")


def _droplet_spec(node: Node, *, volume: Volume | None = None) -> DropletSpec:
    booking = node.booking
    user_data = render_user_data(
        api_url=settings.LABGPU_PUBLIC_API_URL,
        bootstrap_token=bootstrap_token_for(node.pk),
        ssh_authorized_keys=list(booking.user.ssh_keys.values_list("public_key", flat=True)),
        install_smoke=not booking.pool.smoke_preinstalled,
        data_volume=volume.name if volume else None,
        jupyter=booking.jupyter,
        time_scale=settings.TIME_SCALE,
    )
    return DropletSpec(
        node_id=node.pk,
        region=node.region,
        size=node.size,
        image=node.image,
        user_data=user_data,
        tags=droplet_tags(booking),
        volume_ids=(volume.provider_id,) if volume else (),
    )


def nodes_poll(*, account_id: int) -> int:
    """Watch every node of the account that waits on its droplet, with ONE listing per call (not a
    GET per node), so hundreds of booting nodes cost a handful of requests a minute.

    Moves `creating` nodes to `booting` once their droplet is active, learns public IPs, and hands a
    checked node over once its IP is known. Returns how many nodes it looked at.
    """
    waiting = list(
        Node.objects.filter(provider_account_id=account_id)
        .exclude(provider_id="")
        .filter(
            Q(status=NodeStatus.CREATING)
            | Q(status__in=[NodeStatus.BOOTING, NodeStatus.CHECKING], public_ip__isnull=True)
        )
    )
    if not waiting:
        return 0
    account = ProviderAccount.objects.get(pk=account_id)
    with driver_for(account) as driver:
        listed = {str(d.id): d for d in driver.list_ours()}
        crash_point("poll.after_list")
        for node in waiting:
            droplet = listed.get(node.provider_id)
            if droplet is None:
                try:  # a listing can lag behind a create: ask once before believing it gone
                    droplet = driver.get(int(node.provider_id))
                except ProviderNotFound:
                    node_fail(
                        node_id=node.pk,
                        reason=stored_reason("The droplet disappeared while booting."),
                    )
                    continue
            _node_observe(node, droplet)
    return len(waiting)


def _node_observe(node: Node, droplet: Droplet) -> None:
    if droplet.public_ipv4 and not node.public_ip:
        Node.objects.filter(pk=node.pk, public_ip__isnull=True).update(
            public_ip=droplet.public_ipv4, updated_at=now()
        )
    if node.status == NodeStatus.CREATING:
        if droplet.status == "active":
            transition(
                Node,
                pk=node.pk,
                from_statuses=[NodeStatus.CREATING],
                to_status=NodeStatus.BOOTING,
                active_at=now(),
            )
        elif node.status_changed_at and now() - node.status_changed_at > timedelta(
            seconds=settings.LABGPU_BOOT_TIMEOUT_S
        ):
            node_fail(
                node_id=node.pk, reason=stored_reason("The droplet did not become active in time.")
            )
            return
        else:
            Node.objects.filter(pk=node.pk).update(updated_at=now())  # alive: not stuck
    if droplet.public_ipv4:
        node_ready_if_usable(node_id=node.pk)


def accounts_to_poll() -> list[int]:
    """Accounts with a node waiting on its droplet, each at most once per poll interval (several
    beats or workers must not multiply the provider requests)."""
    ids = (
        Node.objects.exclude(provider_id="")
        .filter(
            Q(status=NodeStatus.CREATING)
            | Q(status__in=[NodeStatus.BOOTING, NodeStatus.CHECKING], public_ip__isnull=True)
        )
        .values_list("provider_account_id", flat=True)
        .distinct()
    )
    # One claim per account per slot of 0.8 intervals: a cache key's timeout is whole seconds
    # (Redis), so at a small LABGPU_TIME_SCALE it could not be shorter than the interval itself.
    slot_s = settings.LABGPU_POLL_INTERVAL_S * 0.8
    slot = int(time.time() // slot_s)
    due = []
    for account_id in ids:
        try:
            fresh = cache.add(f"labgpu:poll:{account_id}:{slot}", 1, timeout=math.ceil(slot_s) + 1)
        except Exception:  # the cache is away: poll anyway, polling is idempotent
            fresh = True
        if fresh:
            due.append(account_id)
    return due


def node_drain(*, node_id: int) -> None:
    """The booking is over: stop using the node and destroy it."""
    node = Node.objects.get(pk=node_id)
    if node.status == NodeStatus.FAILED:
        enqueue_on_commit("teardown_node", node.pk)
        return
    with transaction.atomic():
        if transition(
            Node,
            pk=node.pk,
            from_statuses=[s for s in Node.TEARDOWN_FROM if s != NodeStatus.FAILED],
            to_status=NodeStatus.DRAINING,
            destroy_requested_at=now(),
        ):
            crash_point("drain.after_draining")
            enqueue_on_commit("teardown_node", node.pk)


def node_teardown(*, node_id: int) -> None:
    """Destroy the droplet and confirm it is gone; only then is the node `destroyed`.

    Without a provider id the create may still have happened (an ambiguous create), so look the
    node's tag up before believing there is nothing to destroy. Waits for a running provision
    (the lease) rather than racing it.
    """
    with _node_lease(node_id) as mine:
        if not mine:
            raise NodeBusy(f"node {node_id} is being provisioned; tear down after")
        with _recording_provider_errors(node_id):
            _node_teardown(node_id=node_id)


def _node_teardown(*, node_id: int) -> None:
    node = Node.objects.get(pk=node_id)
    if node.status == NodeStatus.DESTROYED:
        return
    transition(
        Node,
        pk=node.pk,
        from_statuses=Node.TEARDOWN_FROM,
        to_status=NodeStatus.DESTROYING,
        destroy_requested_at=node.destroy_requested_at or now(),
    )
    Node.objects.filter(pk=node.pk).update(
        teardown_attempts=node.teardown_attempts + 1, updated_at=now()
    )
    crash_point("teardown.after_destroying")
    with driver_for(node.provider_account) as driver:
        if node.provider_id:
            droplet_ids = [int(node.provider_id)]
        else:
            # An ambiguous create may have made a droplet after all: look its tag up, and record
            # it before destroying it, so it is metered (I-8).
            found = sorted(driver.find_by_tag(node_tag(node.pk)), key=lambda d: d.id)
            if found:
                node_record_droplet(node.pk, found[0], statuses=[NodeStatus.DESTROYING])
            for stray in found[1:]:
                node_destroy_stray(node=node, droplet=stray)
            droplet_ids = [found[0].id] if found else []
        for droplet_id in droplet_ids:
            # The droplet is shut down (cloud-init's labgpu-data unit syncs and unmounts /data),
            # the volume detached and the detach confirmed before the droplet goes.
            volume_release(node=node, driver=driver, droplet_id=droplet_id)
            _node_delete(node, driver=driver, droplet_id=droplet_id)
        crash_point("teardown.after_delete")
        for droplet_id in droplet_ids:
            try:
                driver.get(droplet_id)
            except ProviderNotFound:
                continue
            raise NodeStillExists(f"droplet {droplet_id} of node {node.pk} is still deleting")
    crash_point("teardown.after_confirm")
    with transaction.atomic():
        if transition(
            Node,
            pk=node.pk,
            from_statuses=[NodeStatus.DESTROYING],
            to_status=NodeStatus.DESTROYED,
            destroyed_at=now(),
        ):
            node.refresh_from_db()
            node_meter(node=node)
            audit_record(actor=None, action="node.destroyed", target=node)
    crash_point("teardown.after_destroyed")
    booking_complete_if_done(booking_id=node.booking_id)


def _node_delete(node: Node, *, driver: ProviderDriver, droplet_id: int) -> None:
    """DELETE the droplet and record, at the call, when the provider accepted it: billing ends
    there (I-8), not when a later GET confirms it gone. A retry after a worker died between the
    answer and the record finds the droplet gone; then the first DELETE's send time stands."""
    Node.objects.filter(pk=node.pk, delete_sent_at__isnull=True).update(delete_sent_at=now())
    accepted_now = driver.destroy(droplet_id)
    crash_point("teardown.before_delete_record")
    # The first accepted DELETE ends the bill; a repeat during a slow delete does not move it.
    Node.objects.filter(pk=node.pk, delete_accepted_at__isnull=True).update(
        delete_accepted_at=now() if accepted_now else F("delete_sent_at")
    )


class NodeStillExists(Exception):
    """The provider accepted the destroy but the droplet is still there; retry later."""


class NodeBusy(Exception):
    """Another worker holds the node's provider lease; retry later."""


def node_fail(
    *, node_id: int, reason: str, findings: list | None = None, replace: bool = True
) -> bool:
    """Give a node up: tear it down, and replace it once or fail the booking (I-5). Without
    `replace` the booking fails at once (a replacement would meet the same cause)."""
    with transaction.atomic():
        won = transition(
            Node,
            pk=node_id,
            from_statuses=[s for s in Node.TEARDOWN_FROM if s != NodeStatus.FAILED],
            to_status=NodeStatus.FAILED,
            failed_at=now(),
            failure_reason=reason,
        )
        if not won:
            return False
        node = Node.objects.select_related("booking__pool__instance_type", "booking__lab").get(
            pk=node_id
        )
        audit_record(
            actor=None,
            action="node.fail",
            target=node,
            lab=node.booking.lab,
            data={"reason": reason, "findings": findings or []},
        )
        crash_point("fail.before_commit")
        enqueue_on_commit("teardown_node", node.pk)
        _replace_or_fail_booking(node=node, reason=reason, replace=replace)
    return True


def _replace_or_fail_booking(*, node: Node, reason: str, replace: bool = True) -> None:
    # The pool before the booking's row, as capacity_freed asks: failing frees the slot.
    pool_lock(node.booking.pool_id)
    booking = Booking.objects.select_for_update().get(pk=node.booking_id)
    if booking.status not in (BookingStatus.PROVISIONING, BookingStatus.READY):
        return  # ending or over: nothing to replace
    if replace and node.attempt < MAX_ATTEMPTS and booking.end > now():
        if booking.status == BookingStatus.READY:
            transition(
                Booking,
                pk=booking.pk,
                from_statuses=[BookingStatus.READY],
                to_status=BookingStatus.PROVISIONING,
            )
        node_request(booking=booking, attempt=node.attempt + 1)
        transaction.on_commit(lambda: notifications.booking_node_replaced(booking, reason=reason))
        return
    if transition(
        Booking,
        pk=booking.pk,
        from_statuses=[BookingStatus.PROVISIONING, BookingStatus.READY],
        to_status=BookingStatus.FAILED,
        failure_reason=reason,
    ):
        capacity_freed(booking.pool_id)  # the failed node's slot goes to the waitlist
        booking.refresh_from_db()
        audit_record(
            actor=None,
            action="booking.fail",
            target=booking,
            lab=booking.lab,
            data={"reason": reason},
        )
        transaction.on_commit(lambda: notifications.booking_failed(booking))


def booking_complete_if_done(*, booking_id: int) -> None:
    """An ending booking completes once none of its nodes exists any more; usage is then final."""
    # Called after each node's teardown and by every sweep, most calls find a node still there:
    # they are answered before the pool's lock, which the pool's creates and cancels queue behind.
    # Asked again under the locks below (a node is never created for an ending booking).
    if Node.objects.filter(booking_id=booking_id).exclude(status=NodeStatus.DESTROYED).exists():
        return
    with transaction.atomic():
        # The pool before the booking's row, as capacity_freed asks: completing an early end
        # frees the rest of its time.
        pool_id = Booking.objects.values_list("pool_id", flat=True).get(pk=booking_id)
        pool_lock(pool_id)
        booking = Booking.objects.select_for_update().get(pk=booking_id)
        if booking.nodes.exclude(status=NodeStatus.DESTROYED).exists():
            return
        if booking.status == BookingStatus.ENDING:
            crash_point("complete.before_meter")
            booking_meter(booking=booking)
            if (
                transition(
                    Booking,
                    pk=booking.pk,
                    from_statuses=[BookingStatus.ENDING],
                    to_status=BookingStatus.COMPLETED,
                )
                and booking.ended_at is not None
                and booking.ended_at < booking.end
            ):
                # Ended early (cancelled while running, idle reclaim, force-end): the rest of its
                # time is free from now on, for the pool's waitlist.
                capacity_freed(booking.pool_id)
        elif booking.status == BookingStatus.FAILED:
            booking_meter(booking=booking)
