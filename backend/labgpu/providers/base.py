"""The provider interface: what the provisioning lifecycle needs from a cloud, and nothing more.

Everything here is plain Python (no Django, no HTTP) so the lifecycle can be tested against a fake
and the DigitalOcean driver can be swapped for another cloud.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import Literal, Protocol, runtime_checkable

#: Every droplet we create carries `labgpu-node-<node id>` as both its name and a tag. The tag is
#: how a retried create finds the droplet it already made (I-4) and how reconciliation tells our
#: droplets from everything else on the account (I-3).
NODE_TAG_PREFIX = "labgpu-node-"

_NODE_TAG_RE = re.compile(rf"^{re.escape(NODE_TAG_PREFIX)}(\d+)$")

DropletStatus = Literal["new", "active", "off", "archive"]

#: Every volume we create carries this tag: reconciliation tells our volumes from everything else
#: on the account by it (untracked ones are reported, never deleted).
VOLUME_TAG = "labgpu-volume"
#: DigitalOcean's prose rule for volume names: lowercase, letters/digits/"-", a letter first, ≤ 64.
_VOLUME_NAME_RE = re.compile(r"^[a-z][a-z0-9-]{0,63}$")


def volume_name(*, owner_kind: Literal["user", "lab"], owner_id: int, region: str) -> str:
    """The deterministic name of an owner's volume in `region`: `labgpu-u12-tor1`, `labgpu-l3-tor1`.

    DigitalOcean allows one volume per name and region, so this name makes find-or-create
    idempotent: a retried create either finds the volume or is refused with 409 and then finds it.
    """
    if owner_id < 1:
        raise ValueError(f"owner id must be positive, got {owner_id}")
    name = f"labgpu-{'u' if owner_kind == 'user' else 'l'}{owner_id}-{region}"
    if not _VOLUME_NAME_RE.match(name):
        raise ValueError(f"not a valid volume name: {name!r}")
    return name


def node_tag(node_id: int) -> str:
    """The deterministic name and tag of the droplet for node `node_id`."""
    if node_id < 1:
        raise ValueError(f"node id must be positive, got {node_id}")
    return f"{NODE_TAG_PREFIX}{node_id}"


def node_id_from_tags(tags: Sequence[str]) -> int | None:
    """The node id encoded in our tag, or None when the droplet is not one of ours."""
    for tag in tags:
        match = _NODE_TAG_RE.match(tag)
        if match:
            return int(match.group(1))
    return None


@dataclass(frozen=True, slots=True)
class DropletSpec:
    """What to create for one node. `name` and the node tag derive from `node_id` (I-4).

    `ssh_keys` are key ids or fingerprints *already registered on the provider account* — the API
    does not take raw public keys. A user's own public keys go into `user_data` instead (see
    `cloudinit.render_user_data(ssh_authorized_keys=…)`).
    """

    node_id: int
    region: str
    size: str
    image: str | int
    user_data: str = ""
    ssh_keys: tuple[str | int, ...] = ()
    tags: tuple[str, ...] = ()
    vpc_uuid: str | None = None
    #: block-storage volume ids attached at create; "must not already be attached" (DigitalOcean)
    volume_ids: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        return node_tag(self.node_id)

    @property
    def tag(self) -> str:
        return node_tag(self.node_id)

    @property
    def all_tags(self) -> tuple[str, ...]:
        """Extra tags plus the node tag, without duplicates, node tag first."""
        return (self.tag, *(t for t in dict.fromkeys(self.tags) if t != self.tag))


@dataclass(frozen=True, slots=True)
class Droplet:
    """A provider machine as the lifecycle sees it.

    `status` is the provider's: `active` means the VM runs, not that SSH or the agent is up.
    `public_ipv4` is None until the provider assigns one (typically while `new`).
    """

    id: int
    name: str
    status: DropletStatus
    size_slug: str
    region: str
    image: str | None
    tags: tuple[str, ...]
    public_ipv4: str | None
    private_ipv4: str | None
    created_at: datetime | None
    gpu_count: int | None = None
    gpu_model: str | None = None

    @property
    def node_id(self) -> int | None:
        return node_id_from_tags(self.tags)


@dataclass(frozen=True, slots=True)
class Size:
    """A droplet size from the live `GET /v2/sizes` list. Prices in USD as exact decimals."""

    slug: str
    description: str
    price_hourly: Decimal
    price_monthly: Decimal
    vcpus: int
    memory_mb: int
    disk_gb: int
    regions: tuple[str, ...]
    available: bool
    gpu_count: int | None = None
    gpu_model: str | None = None
    #: VRAM as DigitalOcean reports it in `gpu_info.vram`: the total over the size's GPUs, in GiB.
    gpu_vram_gib: int | None = None

    @property
    def is_gpu(self) -> bool:
        return bool(self.gpu_count)


@dataclass(frozen=True, slots=True)
class VolumeSpec:
    """A block-storage volume to create; `name` should come from `volume_name` (idempotence)."""

    name: str
    region: str
    size_gb: int
    description: str = ""
    tags: tuple[str, ...] = (VOLUME_TAG,)


@dataclass(frozen=True, slots=True)
class Volume:
    """A block-storage volume as the provider shows it. `droplet_ids` holds at most one id."""

    id: str
    name: str
    region: str
    size_gb: int
    droplet_ids: tuple[int, ...]
    tags: tuple[str, ...]
    created_at: datetime | None = None

    @property
    def droplet_id(self) -> int | None:
        return self.droplet_ids[0] if self.droplet_ids else None


VolumeActionStatus = Literal["in-progress", "completed", "errored"]


@dataclass(frozen=True, slots=True)
class VolumeAction:
    """An attach/detach/resize in flight: poll `volume_action` until it is not `in-progress`."""

    id: int
    volume_id: str
    type: str
    status: VolumeActionStatus
    #: when the provider accepted it (a resize bills the new size from here)
    started_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class RateLimitSnapshot:
    """The provider's latest rate-limit headers, as seen by any worker."""

    limit: int | None = None
    remaining: int | None = None
    reset_at: float | None = None  # Unix time
    observed_at: float | None = None
    extra: dict[str, str] = field(default_factory=dict)


@runtime_checkable
class ProviderDriver(Protocol):
    """The operations the lifecycle uses. All raise `errors.ProviderError` subclasses.

    Contract:
    - `create` is NOT idempotent on its own. After `ProviderTransientError` (in particular
      `ProviderAmbiguousCreate`) the caller must `find_by_tag(spec.tag)` and adopt what it finds
      before creating again (I-4). `create_or_adopt` below does exactly that.
    - `get` raises `ProviderNotFound` when the droplet is gone.
    - `destroy` succeeds when the droplet is already gone, and says whether its own DELETE was
      the one accepted (False: already gone).
    - `list_ours` returns every droplet carrying a node tag, whatever its status (I-3).
    """

    def create(self, spec: DropletSpec) -> Droplet: ...

    def get(self, droplet_id: int) -> Droplet: ...

    def destroy(self, droplet_id: int) -> bool: ...

    def find_by_tag(self, tag: str) -> list[Droplet]: ...

    def list_ours(self) -> list[Droplet]: ...

    def sizes(self) -> list[Size]: ...

    def power_down(self, droplet_id: int, *, graceful: bool = True) -> None:
        """`shutdown` (graceful: the machine runs its shutdown hooks) or `power_off`; poll `get`
        until the droplet is `off`. Raises `ProviderPendingEvent` while it is being created."""
        ...

    # Volumes. `create_volume` is idempotent by (name, region): a name taken in the region returns
    # the existing volume. `attach_volume`/`detach_volume` return None when there is nothing to do
    # (already attached to that droplet / not attached to it). `delete_volume` succeeds when the
    # volume is gone and raises `ProviderPermanentError` while it is attached.

    def create_volume(self, spec: VolumeSpec) -> Volume: ...

    def get_volume(self, volume_id: str) -> Volume: ...

    def find_volume(self, name: str, region: str) -> Volume | None: ...

    def list_volumes(self, *, tag: str | None = VOLUME_TAG) -> list[Volume]: ...

    def delete_volume(self, volume_id: str) -> None: ...

    def attach_volume(self, volume_id: str, droplet_id: int) -> VolumeAction | None: ...

    def detach_volume(self, volume_id: str, droplet_id: int) -> VolumeAction | None: ...

    def resize_volume(self, volume_id: str, size_gb: int) -> VolumeAction: ...

    def volume_action(self, volume_id: str, action_id: int) -> VolumeAction: ...

    def list_volume_actions(self, volume_id: str) -> list[VolumeAction]: ...

    def close(self) -> None: ...


def create_or_adopt(
    driver: ProviderDriver, spec: DropletSpec, *, before_create: Callable[[], None] | None = None
) -> tuple[Droplet, bool]:
    """Return the node's droplet, creating it only when none carries its tag yet.

    The second element is True when an existing droplet was adopted. Use it on every retry of a
    create (I-4); on the very first attempt a plain `create` saves a full listing.
    `before_create` runs between the listing and the POST (the caller re-checks its lease there)
    and may raise to stop the create.
    """
    existing = driver.find_by_tag(spec.tag)
    if existing:
        # More than one would mean an earlier duplicate; adopt the oldest and let reconciliation
        # destroy the rest (they carry the same node tag, so they are visible to it).
        existing.sort(key=lambda d: d.id)
        return existing[0], True
    if before_create is not None:
        before_create()
    return driver.create(spec), False
