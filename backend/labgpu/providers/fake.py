"""An in-memory `ProviderDriver` for fast service-level tests (no HTTP, no subprocess).

It keeps the contract of the real driver — deterministic name and tag, `ProviderNotFound` on a
gone droplet, idempotent destroy, `ProviderAmbiguousCreate` that may or may not have created —
so lifecycle code tested against it behaves the same against DigitalOcean. For the real parts
(rate limits, HTTP faults, the agent) use the emulator.

    fake = FakeDriver(boot_after_gets=1)
    fake.fail_next_create(created=True)       # 5xx after the droplet was made
    fake.no_capacity.add("gpu-mi300x1-192gb")  # 422
"""

from __future__ import annotations

import itertools
import threading
from dataclasses import replace
from datetime import UTC, datetime
from decimal import Decimal

from .base import (
    NODE_TAG_PREFIX,
    VOLUME_TAG,
    Droplet,
    DropletSpec,
    Size,
    Volume,
    VolumeAction,
    VolumeSpec,
)
from .errors import (
    ProviderAmbiguousCreate,
    ProviderNoCapacity,
    ProviderNotFound,
    ProviderPermanentError,
    ProviderTransientError,
)


def _not_found() -> ProviderNotFound:
    return ProviderNotFound(
        "The resource you were accessing could not be found.", status=404, id="not_found"
    )


class FakeDriver:
    def __init__(self, *, boot_after_gets: int = 0, sizes: list[Size] | None = None) -> None:
        #: a droplet turns `active` on the Nth `get` after its creation (0: created active)
        self.boot_after_gets = boot_after_gets
        self.droplets: dict[int, Droplet] = {}
        self.no_capacity: set[str] = set()
        self.calls: list[tuple[str, object]] = []
        self._gets: dict[int, int] = {}
        self._ids = itertools.count(700_000_001)
        self._create_failures: list[bool] = []
        self._transient_failures = 0
        self._lock = threading.Lock()
        self.volumes: dict[str, Volume] = {}
        self.volume_actions: dict[int, VolumeAction] = {}
        #: action types ("attach", "detach", "resize") whose actions end `errored`, changing nothing
        self.failing_volume_actions: set[str] = set()
        self._volume_ids = itertools.count(1)
        self._action_ids = itertools.count(900_000_001)
        self._sizes = sizes or [
            Size(
                slug="gpu-mi300x1-192gb",
                description="AMD MI300X - 1X",
                price_hourly=Decimal("1.99"),
                price_monthly=Decimal("1337.28"),
                vcpus=20,
                memory_mb=245760,
                disk_gb=720,
                regions=("atl1", "tor1", "nyc2"),
                available=True,
                gpu_count=1,
                gpu_model="amd_mi300x",
                gpu_vram_gib=192,
            )
        ]

    # -- fault knobs ----------------------------------------------------------------------------

    def fail_next_create(self, *, created: bool) -> None:
        """The next create raises ProviderAmbiguousCreate; `created` says whether it made one."""
        self._create_failures.append(created)

    def fail_next_calls(self, count: int) -> None:
        """The next `count` calls of any kind raise ProviderTransientError (HTTP 500)."""
        self._transient_failures += count

    def vanish(self, droplet_id: int) -> None:
        self.droplets.pop(droplet_id, None)

    # -- ProviderDriver -----------------------------------------------------------------------

    def _enter(self, name: str, arg: object) -> None:
        self.calls.append((name, arg))
        if self._transient_failures:
            self._transient_failures -= 1
            raise ProviderTransientError("Server Error", status=500, id="server_error")

    def create(self, spec: DropletSpec) -> Droplet:
        with self._lock:
            self._enter("create", spec.tag)
            if spec.size in self.no_capacity:
                raise ProviderNoCapacity(
                    "Size is not available in this region.",
                    region=spec.region,
                    size=spec.size,
                    status=422,
                    id="unprocessable_entity",
                )
            failure = self._create_failures.pop(0) if self._create_failures else None
            if failure is False:
                raise ProviderAmbiguousCreate("Server Error", tag=spec.tag, status=500)
            droplet_id = next(self._ids)
            n = droplet_id - 700_000_000
            droplet = Droplet(
                id=droplet_id,
                name=spec.name,
                status="active" if self.boot_after_gets == 0 else "new",
                size_slug=spec.size,
                region=spec.region,
                image=str(spec.image),
                tags=spec.all_tags,
                public_ipv4=f"192.0.2.{n % 250 + 2}",
                private_ipv4=f"10.0.0.{n % 250 + 2}",
                created_at=datetime.now(UTC),
                gpu_count=1,
                gpu_model="amd_mi300x",
            )
            for volume_id in spec.volume_ids:
                volume = self.volumes.get(volume_id)
                if volume is None or volume.droplet_ids or volume.region != spec.region:
                    raise ProviderPermanentError(
                        f"Volume {volume_id} cannot be attached.", status=422
                    )
            for volume_id in spec.volume_ids:
                self.volumes[volume_id] = replace(
                    self.volumes[volume_id], droplet_ids=(droplet_id,)
                )
            self.droplets[droplet_id] = droplet
            self._gets[droplet_id] = 0
            if failure is True:
                raise ProviderAmbiguousCreate("Server Error", tag=spec.tag, status=500)
            return droplet

    def get(self, droplet_id: int) -> Droplet:
        with self._lock:
            self._enter("get", droplet_id)
            droplet = self.droplets.get(droplet_id)
            if droplet is None:
                raise ProviderNotFound(
                    "The resource you were accessing could not be found.",
                    status=404,
                    id="not_found",
                )
            self._gets[droplet_id] = self._gets.get(droplet_id, 0) + 1
            if droplet.status == "new" and self._gets[droplet_id] >= self.boot_after_gets:
                droplet = replace(droplet, status="active")
                self.droplets[droplet_id] = droplet
            return droplet

    def destroy(self, droplet_id: int) -> bool:
        with self._lock:
            self._enter("destroy", droplet_id)
            existed = self.droplets.pop(droplet_id, None) is not None
            for volume in list(self.volumes.values()):  # a destroyed droplet lets go of volumes
                if droplet_id in volume.droplet_ids:
                    self.volumes[volume.id] = replace(volume, droplet_ids=())
            return existed

    def find_by_tag(self, tag: str) -> list[Droplet]:
        with self._lock:
            self._enter("find_by_tag", tag)
            return [d for d in self.droplets.values() if tag in d.tags]

    def list_ours(self) -> list[Droplet]:
        with self._lock:
            self._enter("list_ours", None)
            return [
                d
                for d in self.droplets.values()
                if any(t.startswith(NODE_TAG_PREFIX) for t in d.tags)
            ]

    def sizes(self) -> list[Size]:
        with self._lock:
            self._enter("sizes", None)
            return list(self._sizes)

    def power_down(self, droplet_id: int, *, graceful: bool = True) -> None:
        with self._lock:
            self._enter("power_down", droplet_id)
            droplet = self.droplets.get(droplet_id)
            if droplet is None:
                raise _not_found()
            self.droplets[droplet_id] = replace(droplet, status="off")

    # -- volumes (same rules as the emulator: one droplet per volume, same region) ---------------

    def create_volume(self, spec: VolumeSpec) -> Volume:
        with self._lock:
            self._enter("create_volume", spec.name)
            for volume in self.volumes.values():
                if volume.name == spec.name and volume.region == spec.region:
                    return volume
            volume = Volume(
                id=f"00000000-0000-4000-8000-{next(self._volume_ids):012d}",
                name=spec.name,
                region=spec.region,
                size_gb=spec.size_gb,
                droplet_ids=(),
                tags=tuple(spec.tags),
                created_at=datetime.now(UTC),
            )
            self.volumes[volume.id] = volume
            return volume

    def get_volume(self, volume_id: str) -> Volume:
        with self._lock:
            self._enter("get_volume", volume_id)
            if volume_id not in self.volumes:
                raise _not_found()
            return self.volumes[volume_id]

    def find_volume(self, name: str, region: str) -> Volume | None:
        with self._lock:
            self._enter("find_volume", name)
            return next(
                (v for v in self.volumes.values() if v.name == name and v.region == region), None
            )

    def list_volumes(self, *, tag: str | None = VOLUME_TAG) -> list[Volume]:
        with self._lock:
            self._enter("list_volumes", tag)
            return [v for v in self.volumes.values() if tag is None or tag in v.tags]

    def delete_volume(self, volume_id: str) -> None:
        with self._lock:
            self._enter("delete_volume", volume_id)
            volume = self.volumes.get(volume_id)
            if volume is None:
                return
            if volume.droplet_ids:
                raise ProviderPermanentError("Volume is attached to a Droplet.", status=422)
            del self.volumes[volume_id]

    def _action(self, volume_id: str, kind: str, change: Volume | None) -> VolumeAction:
        failing = kind in self.failing_volume_actions
        if change is not None and not failing:
            self.volumes[volume_id] = change
        action = VolumeAction(
            id=next(self._action_ids),
            volume_id=volume_id,
            type=f"{kind}_volume",
            status="errored" if failing else "completed",
            started_at=datetime.now(UTC),
        )
        self.volume_actions[action.id] = action
        return action

    def attach_volume(self, volume_id: str, droplet_id: int) -> VolumeAction | None:
        with self._lock:
            self._enter("attach_volume", (volume_id, droplet_id))
            volume = self.volumes.get(volume_id)
            droplet = self.droplets.get(droplet_id)
            if volume is None or droplet is None:
                raise _not_found()
            if volume.droplet_ids == (droplet_id,):
                return None
            if volume.droplet_ids or volume.region != droplet.region:
                raise ProviderPermanentError("Volume cannot be attached.", status=422)
            return self._action(volume_id, "attach", replace(volume, droplet_ids=(droplet_id,)))

    def detach_volume(self, volume_id: str, droplet_id: int) -> VolumeAction | None:
        with self._lock:
            self._enter("detach_volume", (volume_id, droplet_id))
            volume = self.volumes.get(volume_id)
            if volume is None:
                raise _not_found()
            if droplet_id not in volume.droplet_ids:
                return None
            return self._action(volume_id, "detach", replace(volume, droplet_ids=()))

    def resize_volume(self, volume_id: str, size_gb: int) -> VolumeAction:
        with self._lock:
            self._enter("resize_volume", (volume_id, size_gb))
            volume = self.volumes.get(volume_id)
            if volume is None:
                raise _not_found()
            if size_gb <= volume.size_gb:
                raise ProviderPermanentError("Volumes may only be resized upwards.", status=422)
            return self._action(volume_id, "resize", replace(volume, size_gb=size_gb))

    def volume_action(self, volume_id: str, action_id: int) -> VolumeAction:
        with self._lock:
            self._enter("volume_action", action_id)
            action = self.volume_actions.get(action_id)
            if action is None or action.volume_id != volume_id:
                raise _not_found()
            return action

    def list_volume_actions(self, volume_id: str) -> list[VolumeAction]:
        with self._lock:
            self._enter("list_volume_actions", volume_id)
            mine = [a for a in self.volume_actions.values() if a.volume_id == volume_id]
            return sorted(mine, key=lambda a: -a.id)

    def close(self) -> None:
        pass
