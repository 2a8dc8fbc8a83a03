"""The emulated account: droplets, their time-driven lifecycle, injected faults, persistence.

Droplet progress is a function of wall-clock timestamps stored with the droplet (`active_at`,
`vanish_at`, `gone_at`), not of timers, so a restarted emulator picks up exactly where it was.
All mutation happens on the server's event loop, so no locks are needed.
"""

from __future__ import annotations

import fnmatch
import ipaddress
import json
import logging
import os
import re
import tempfile
import time
import uuid
from dataclasses import asdict, dataclass, field, fields
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from . import catalog

logger = logging.getLogger("emulator")

USER_DATA_LIMIT = 64 * 1024
FIRST_DROPLET_ID = 500_000_001
_NAME_RE = re.compile(r"^[a-zA-Z0-9]?[a-z0-9A-Z.\-]*[a-z0-9A-Z]$")
_TAG_RE = re.compile(r"^[a-zA-Z0-9_\-:]{1,255}$")
_FINGERPRINT_RE = re.compile(r"^([0-9a-f]{2}:){15}[0-9a-f]{2}$|^SHA256:[A-Za-z0-9+/=]{43,44}$")
_TESTNETS = [ipaddress.ip_network(n) for n in ("192.0.2.0/24", "198.51.100.0/24", "203.0.113.0/24")]


class ApiError(Exception):
    """An error answered the way DigitalOcean does: status plus `{"id", "message"}`."""

    def __init__(self, status: int, error_id: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.error_id = error_id
        self.message = message


def not_found() -> ApiError:
    return ApiError(404, "not_found", "The resource you were accessing could not be found.")


def unprocessable(message: str) -> ApiError:
    return ApiError(422, "unprocessable_entity", message)


@dataclass
class Faults:
    """What can go wrong. POST /_emulator/faults replaces the keys it names."""

    #: share of /v2 requests answered 500 before doing anything
    error_rate_5xx: float = 0.0
    #: share of /v2 requests answered only after `timeout_s` (the work itself is done first)
    timeout_rate: float = 0.0
    timeout_s: float = 30.0
    #: creates of these sizes fail with 422 (no capacity)
    no_capacity_sizes: list[str] = field(default_factory=list)
    #: creates of these sizes fail with 422 (size not enabled for the account)
    not_enabled_sizes: list[str] = field(default_factory=list)
    #: True: droplets created from now on stay `new`; a list: only droplets with these names
    never_boot: bool | list[str] = False
    #: droplets created from now on disappear this many seconds after turning active
    vanish_after_s: float | None = None
    #: a DELETE answers 204 at once but the droplet stays (status `off`) this long
    slow_delete_s: float = 0.0
    #: one-shot rules, first match wins: {method, path (glob), status, after_create, delay_s,
    #: times, message}. `after_create`: the request IS carried out (a create makes the droplet),
    #: then `status` is answered.
    next: list[dict[str, Any]] = field(default_factory=list)
    #: droplet name -> agent fixture profile; "none" starts no agent (one that never reports)
    agent_profiles: dict[str, str] = field(default_factory=dict)
    #: size slug -> agent fixture profile, overriding the built-in per-size default
    size_profiles: dict[str, str] = field(default_factory=dict)

    def update(self, changes: dict[str, Any]) -> None:
        known = {f.name for f in fields(self)}
        unknown = set(changes) - known
        if unknown:
            raise ValueError(f"unknown fault(s): {sorted(unknown)}; known: {sorted(known)}")
        for key, value in changes.items():
            if key in {"error_rate_5xx", "timeout_rate"}:
                value = float(value)
                if not 0 <= value <= 1:
                    raise ValueError(f"{key} must be within [0, 1]")
            elif key in {"timeout_s", "slow_delete_s"}:
                value = float(value)
            elif key == "vanish_after_s":
                value = None if value is None else float(value)
            elif key == "never_boot":
                value = value if isinstance(value, bool) else [str(v) for v in value]
            elif key in {"no_capacity_sizes", "not_enabled_sizes"}:
                value = [str(v) for v in value]
            elif key == "next":
                value = [_check_rule(rule) for rule in value]
            elif key in {"agent_profiles", "size_profiles"}:
                value = {str(k): str(v) for k, v in dict(value).items()}
            setattr(self, key, value)

    def take_rule(self, method: str, path: str) -> dict[str, Any] | None:
        """The first queued rule matching this request, consumed (or decremented)."""
        for index, rule in enumerate(self.next):
            if rule.get("method", "*").upper() not in {"*", method.upper()}:
                continue
            if not fnmatch.fnmatchcase(path, rule.get("path", "*")):
                continue
            times = int(rule.get("times", 1))
            if times <= 1:
                del self.next[index]
            else:
                self.next[index] = {**rule, "times": times - 1}
            return rule
        return None

    def boots(self, name: str) -> bool:
        if isinstance(self.never_boot, bool):
            return not self.never_boot
        return name not in self.never_boot


def _check_rule(rule: Any) -> dict[str, Any]:
    if not isinstance(rule, dict):
        raise ValueError("each entry of `next` must be an object")
    allowed = {"method", "path", "status", "after_create", "delay_s", "times", "message"}
    unknown = set(rule) - allowed
    if unknown:
        raise ValueError(f"unknown key(s) in a `next` rule: {sorted(unknown)}")
    if "status" not in rule and "delay_s" not in rule:
        raise ValueError("a `next` rule needs `status` and/or `delay_s`")
    return dict(rule)


@dataclass
class AgentInfo:
    #: pending | running | exited | missing | disabled | no_config | stopped
    status: str = "pending"
    profile: str | None = None
    pid: int | None = None
    exit_code: int | None = None
    log: str | None = None
    starts: int = 0


@dataclass
class EmuDroplet:
    id: int
    name: str
    size_slug: str
    region: str
    image: str | int
    tags: list[str]
    user_data: str
    ssh_keys: list[Any]
    vpc_uuid: str
    created_at: float
    #: None: never boots
    active_at: float | None
    ip_at: float
    public_ip: str
    private_ip: str
    vanish_at: float | None = None
    #: set by DELETE: the droplet disappears at this time (slow deletes)
    gone_at: float | None = None
    status: str = "new"
    agent: AgentInfo = field(default_factory=AgentInfo)

    @property
    def is_gpu(self) -> bool:
        return catalog.is_gpu_size(self.size_slug)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> EmuDroplet:
        agent = AgentInfo(**data.pop("agent", {}))
        return cls(**data, agent=agent)


def iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class Store:
    """Droplets and faults, with optional persistence to a JSON file."""

    def __init__(self, *, state_file: Path | None, ip_mode: str = "testnet") -> None:
        self.state_file = state_file
        self.ip_mode = ip_mode
        self.droplets: dict[int, EmuDroplet] = {}
        self.faults = Faults()
        self.next_id = FIRST_DROPLET_ID
        self.next_action_id = 900_000_001
        self.ip_counter = 0
        self.dirty = False
        if state_file and state_file.exists():
            self._load(state_file)

    # -- persistence ----------------------------------------------------------------------------

    def _load(self, path: Path) -> None:
        data = json.loads(path.read_text())
        self.next_id = int(data.get("next_id", FIRST_DROPLET_ID))
        self.next_action_id = int(data.get("next_action_id", self.next_action_id))
        self.ip_counter = int(data.get("ip_counter", 0))
        self.faults = Faults()
        self.faults.update(data.get("faults", {}))
        for item in data.get("droplets", []):
            droplet = EmuDroplet.from_dict(dict(item))
            self.droplets[droplet.id] = droplet
        logger.info("loaded %d droplet(s) from %s", len(self.droplets), path)

    def save(self) -> None:
        self.dirty = False
        if not self.state_file:
            return
        data = {
            "version": 1,
            "next_id": self.next_id,
            "next_action_id": self.next_action_id,
            "ip_counter": self.ip_counter,
            "faults": asdict(self.faults),
            # plain __dict__ copies: dataclasses.asdict deep-copies and is 10x slower here
            "droplets": [{**vars(d), "agent": dict(vars(d.agent))} for d in self.droplets.values()],
        }
        self.state_file.parent.mkdir(parents=True, exist_ok=True)
        # write-then-rename so a crash never leaves a half-written state file
        fd, tmp = tempfile.mkstemp(dir=self.state_file.parent, prefix=".emulator-state-")
        with os.fdopen(fd, "w") as fh:
            fh.write(json.dumps(data, separators=(",", ":")))
        os.replace(tmp, self.state_file)

    def reset(self) -> None:
        self.droplets.clear()
        self.faults = Faults()
        self.dirty = True

    # -- addresses ------------------------------------------------------------------------------

    def _allocate_ip(self) -> str:
        n = self.ip_counter
        self.ip_counter += 1
        if self.ip_mode == "loopback":
            n += 2  # skip 127.0.0.0 and 127.0.0.1
            return f"127.{(n >> 16) & 255}.{(n >> 8) & 255}.{n & 255}"
        per_net = 253  # .1 is the gateway, .255 broadcast
        net = _TESTNETS[(n // per_net) % len(_TESTNETS)]
        return str(net.network_address + 2 + n % per_net)

    # -- droplets -------------------------------------------------------------------------------

    def new_action_id(self) -> int:
        self.next_action_id += 1
        return self.next_action_id - 1

    def create(
        self,
        body: Any,
        *,
        boot_delay_s: float,
        ip_delay_s: float,
        now: float | None = None,
    ) -> EmuDroplet:
        now = time.time() if now is None else now
        if not isinstance(body, dict):
            raise ApiError(400, "bad_request", "The request body must be a JSON object.")
        if "names" in body:
            raise unprocessable(
                "Creating several droplets at once is not supported by the emulator."
            )
        name = body.get("name")
        if not isinstance(name, str) or len(name) > 255 or not _NAME_RE.match(name):
            raise unprocessable("Name is invalid: only letters, numbers, '.' and '-' are allowed.")
        size = body.get("size")
        if not isinstance(size, str) or size not in catalog.SIZES_BY_SLUG:
            raise unprocessable("You specified an invalid size for Droplet creation.")
        size_info = catalog.SIZES_BY_SLUG[size]
        region = body.get("region") or size_info["regions"][0]
        if region not in catalog.REGION_NAMES:
            raise unprocessable("You specified an invalid region for Droplet creation.")
        image = body.get("image")
        if image is None or catalog.find_image(image) is None:
            raise unprocessable("You specified an invalid image for Droplet creation.")
        user_data = body.get("user_data") or ""
        if not isinstance(user_data, str):
            raise unprocessable("user_data must be a string.")
        if len(user_data.encode()) > USER_DATA_LIMIT:
            raise unprocessable("user_data is limited to 64 KiB.")
        ssh_keys = body.get("ssh_keys") or []
        if not isinstance(ssh_keys, list):
            raise unprocessable("ssh_keys must be a list of key ids or fingerprints.")
        for key in ssh_keys:
            is_id = isinstance(key, int) or (isinstance(key, str) and key.isdigit())
            if not is_id and not (isinstance(key, str) and _FINGERPRINT_RE.match(key)):
                raise unprocessable(
                    f"ssh_keys: {str(key)[:30]!r} is not the id or fingerprint of a key on "
                    "this account (raw public keys are not accepted)."
                )
        tags = body.get("tags") or []
        if not isinstance(tags, list) or not all(
            isinstance(t, str) and _TAG_RE.match(t) for t in tags
        ):
            raise unprocessable(
                "Tags may contain letters, numbers, colons, dashes and underscores."
            )
        if size in self.faults.not_enabled_sizes:
            raise unprocessable(
                f"Size {size} is not enabled for this account. Request access to GPU Droplets "
                "from the control panel."
            )
        if region not in size_info["regions"]:
            raise unprocessable(f"Size {size} is not available in region {region}.")
        if size in self.faults.no_capacity_sizes:
            raise unprocessable(
                f"There is currently no capacity for {size} in {region}. Please try another "
                "region or try again later."
            )
        droplet_id = self.next_id
        self.next_id += 1
        boots = self.faults.boots(name)
        active_at = now + boot_delay_s if boots else None
        vanish_at = None
        if active_at is not None and self.faults.vanish_after_s is not None:
            vanish_at = active_at + self.faults.vanish_after_s
        droplet = EmuDroplet(
            id=droplet_id,
            name=name,
            size_slug=size,
            region=region,
            image=image,
            tags=list(dict.fromkeys(tags)),
            user_data=user_data,
            ssh_keys=list(ssh_keys),
            vpc_uuid=str(body.get("vpc_uuid") or uuid.uuid5(uuid.NAMESPACE_DNS, f"vpc.{region}")),
            created_at=now,
            active_at=active_at,
            ip_at=now + min(ip_delay_s, boot_delay_s),
            public_ip=self._allocate_ip(),
            private_ip=str(ipaddress.ip_address("10.0.0.0") + (droplet_id & 0xFFFFFF)),
            vanish_at=vanish_at,
        )
        self.droplets[droplet_id] = droplet
        self.dirty = True
        return droplet

    def get(self, droplet_id: int) -> EmuDroplet:
        droplet = self.droplets.get(droplet_id)
        if droplet is None:
            raise not_found()
        return droplet

    def delete(self, droplet_id: int, *, now: float | None = None) -> EmuDroplet:
        now = time.time() if now is None else now
        droplet = self.get(droplet_id)
        if droplet.gone_at is None:
            droplet.gone_at = now + self.faults.slow_delete_s
            droplet.status = "off"
            self.dirty = True
        return droplet

    def listing(
        self, *, kind: str | None, tag_name: str | None, name: str | None
    ) -> list[EmuDroplet]:
        if kind is not None and (tag_name is not None or name is not None):
            raise unprocessable("The type parameter cannot be combined with tag_name or name.")
        if kind not in {None, "droplets", "gpus"}:
            raise unprocessable("type must be one of: droplets, gpus.")
        # DigitalOcean's quirk: without type=gpus, GPU droplets are left out, tag filter or not
        want_gpu = kind == "gpus"
        result = [d for d in self.droplets.values() if d.is_gpu == want_gpu]
        if tag_name is not None:
            result = [d for d in result if tag_name in d.tags]
        if name is not None:
            result = [d for d in result if d.name == name]
        return sorted(result, key=lambda d: d.id)

    def vanish(self, droplet_id: int) -> EmuDroplet:
        droplet = self.get(droplet_id)
        del self.droplets[droplet_id]
        self.dirty = True
        return droplet

    def advance(self, now: float | None = None) -> tuple[list[EmuDroplet], list[EmuDroplet]]:
        """Apply time: boots, vanishings, finished deletes. Returns (became active, removed)."""
        now = time.time() if now is None else now
        activated: list[EmuDroplet] = []
        removed: list[EmuDroplet] = []
        for droplet in list(self.droplets.values()):
            if droplet.gone_at is not None and now >= droplet.gone_at:
                removed.append(droplet)
            elif droplet.vanish_at is not None and now >= droplet.vanish_at:
                logger.info("droplet %s (%s) vanishes", droplet.id, droplet.name)
                removed.append(droplet)
            elif (
                droplet.status == "new"
                and droplet.gone_at is None
                and droplet.active_at is not None
                and now >= droplet.active_at
            ):
                droplet.status = "active"
                activated.append(droplet)
                self.dirty = True
        for droplet in removed:
            del self.droplets[droplet.id]
            self.dirty = True
        return activated, removed

    def seed(
        self,
        *,
        count: int,
        size: str,
        region: str | None,
        tags: list[str],
        name_prefix: str,
        status: str,
        now: float | None = None,
    ) -> list[EmuDroplet]:
        """Bulk-create droplets without going through the API (pagination tests, benchmarks)."""
        now = time.time() if now is None else now
        made = []
        for i in range(count):
            droplet = self.create(
                {
                    "name": f"{name_prefix}{self.next_id}-{i}",
                    "size": size,
                    "region": region,
                    "image": "gpu-amd-base" if catalog.is_gpu_size(size) else "ubuntu-24-04-x64",
                    "tags": tags,
                },
                boot_delay_s=0.0 if status == "active" else 3600.0 * 24,
                ip_delay_s=0.0,
                now=now,
            )
            droplet.agent.status = "disabled"  # seeded droplets carry no agent configuration
            made.append(droplet)
        return made

    def to_api(self, droplet: EmuDroplet, now: float | None = None) -> dict[str, Any]:
        """The droplet as DigitalOcean's API shows it."""
        now = time.time() if now is None else now
        size = catalog.SIZES_BY_SLUG[droplet.size_slug]
        image = catalog.find_image(droplet.image) or catalog.IMAGES[0]
        v4: list[dict[str, Any]] = []
        if now >= droplet.ip_at:
            v4.append(
                {"ip_address": droplet.private_ip, "netmask": "255.255.0.0", "type": "private"}
            )
            gateway = droplet.public_ip.rsplit(".", 1)[0] + ".1"
            v4.append(
                {
                    "ip_address": droplet.public_ip,
                    "netmask": "255.255.255.0",
                    "gateway": gateway,
                    "type": "public",
                }
            )
        data: dict[str, Any] = {
            "id": droplet.id,
            "name": droplet.name,
            "memory": size["memory"],
            "vcpus": size["vcpus"],
            "disk": size["disk"],
            "disk_info": size["disk_info"],
            "locked": False,
            "status": droplet.status,
            "kernel": None,
            "created_at": iso(droplet.created_at),
            "features": ["droplet_agent", "private_networking"],
            "backup_ids": [],
            "next_backup_window": None,
            "snapshot_ids": [],
            "image": catalog.image_json(image),
            "volume_ids": [],
            "size": size,
            "size_slug": droplet.size_slug,
            "networks": {"v4": v4, "v6": []},
            "region": catalog.region_json(droplet.region),
            "tags": list(droplet.tags),
            "vpc_uuid": droplet.vpc_uuid,
        }
        if "gpu_info" in size:
            data["gpu_info"] = size["gpu_info"]
        return data
