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

from .base import NODE_TAG_PREFIX, Droplet, DropletSpec, Size
from .errors import (
    ProviderAmbiguousCreate,
    ProviderNoCapacity,
    ProviderNotFound,
    ProviderTransientError,
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

    def destroy(self, droplet_id: int) -> None:
        with self._lock:
            self._enter("destroy", droplet_id)
            self.droplets.pop(droplet_id, None)

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

    def close(self) -> None:
        pass
