"""The emulated account: droplets, their time-driven lifecycle, injected faults, persistence.

Droplet progress is a function of wall-clock timestamps stored with the droplet (`active_at`,
`vanish_at`, `gone_at`), not of timers, so a restarted emulator picks up exactly where it was.
All mutation happens on the server's event loop, so no locks are needed.
"""

from __future__ import annotations

import base64
import binascii
import fnmatch
import hashlib
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
FIRST_KEY_ID = 41_000_001
_NAME_RE = re.compile(r"^[a-zA-Z0-9]?[a-z0-9A-Z.\-]*[a-z0-9A-Z]$")
_TAG_RE = re.compile(r"^[a-zA-Z0-9_\-:]{1,255}$")
#: DigitalOcean's prose rule for volume names (schema `volume_base.name`; the schema itself has no
#: pattern): lowercase letters, digits and "-", starting with a letter, at most 64 characters.
_VOLUME_NAME_RE = re.compile(r"^[a-z][a-z0-9-]{0,63}$")
#: "Volumes may only be resized upwards. The maximum size for a volume is 16TiB."
VOLUME_MAX_GB = 16384
#: "up to fifteen volumes may be attached to a Droplet at a time"
VOLUMES_PER_DROPLET = 15
_TESTNETS = [ipaddress.ip_network(n) for n in ("192.0.2.0/24", "198.51.100.0/24", "203.0.113.0/24")]


class ApiError(Exception):
    """An error answered the way DigitalOcean does: status plus `{"id", "message"}`.

    `attributes` become `error_attributes` in the body (DigitalOcean adds `available_regions`
    there when a size is out of capacity).
    """

    def __init__(
        self,
        status: int,
        error_id: str,
        message: str,
        *,
        attributes: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.error_id = error_id
        self.message = message
        self.attributes = attributes

    def body(self) -> dict[str, Any]:
        body: dict[str, Any] = {"id": self.error_id, "message": self.message}
        if self.attributes:
            body["error_attributes"] = self.attributes
        return body


def not_found() -> ApiError:
    return ApiError(404, "not_found", "The resource you were accessing could not be found.")


def unprocessable(message: str, **attributes: Any) -> ApiError:
    return ApiError(422, "unprocessable_entity", message, attributes=attributes or None)


#: DigitalOcean's own words (seen in API answers quoted by packer, terraform and doctl issues).
PENDING_EVENT = "Droplet already has a pending event."
SIZE_UNAVAILABLE = "Size is not available in this region."
#: the spec's droplets_create: "Up to ten Droplets may be created this way at a time."
MAX_NAMES_PER_CREATE = 10
INVALID_IMAGE = "You specified an invalid image for Droplet creation."


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
    #: droplet tag -> heartbeats after which the agents of droplets carrying it report idle GPUs
    #: and no session (fixture mode's LABGPU_FIXTURE_IDLE_AFTER): the demo sends one node idle
    idle_after: dict[str, int] = field(default_factory=dict)
    #: size slug -> region -> machines still free there. A create takes one, a droplet that is
    #: gone gives it back; at 0 creates answer 422 and `GET /v2/sizes` leaves the region out.
    #: Absent = unlimited. Updates MERGE per size x region; null lifts a limit.
    stock: dict[str, dict[str, int]] = field(default_factory=dict)
    #: volume action types ("attach", "detach", "resize") whose actions from now on end
    #: `errored` and change nothing (a detach that fails on the provider's side)
    volume_action_errors: list[str] = field(default_factory=list)

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
            elif key in {"no_capacity_sizes", "not_enabled_sizes", "volume_action_errors"}:
                value = [str(v) for v in value]
            elif key == "next":
                value = [_check_rule(rule) for rule in value]
            elif key in {"agent_profiles", "size_profiles"}:
                value = {str(k): str(v) for k, v in dict(value).items()}
            elif key == "idle_after":
                value = parse_idle_after(value)
            elif key == "stock":
                value = merge_stock(self.stock, value)
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


def parse_idle_after(value: Any) -> dict[str, int]:
    """{tag: heartbeats}, each a whole number from 0; anything else is refused."""
    if not isinstance(value, dict):
        raise ValueError("idle_after must be an object: {tag: heartbeats}")
    parsed: dict[str, int] = {}
    for tag, beats in value.items():
        if isinstance(beats, bool) or not isinstance(beats, int) or beats < 0:
            raise ValueError(f"idle_after[{tag!r}] must be a whole number of heartbeats >= 0")
        parsed[str(tag)] = beats
    return parsed


def merge_stock(current: dict[str, dict[str, int]], changes: Any) -> dict[str, dict[str, int]]:
    """`current` with `changes` ({size: {region: n | None}}) applied; None lifts the limit."""
    if not isinstance(changes, dict):
        raise ValueError("stock must be an object: {size: {region: count}}")
    merged = {size: dict(regions) for size, regions in current.items()}
    for size, regions in changes.items():
        if size not in catalog.SIZES_BY_SLUG:
            raise ValueError(f"stock: unknown size {size!r}")
        if not isinstance(regions, dict):
            raise ValueError(f"stock[{size!r}] must be an object: {{region: count}}")
        for region, count in regions.items():
            if region not in catalog.REGION_NAMES:
                raise ValueError(f"stock: unknown region {region!r}")
            if count is None:
                merged.get(size, {}).pop(region, None)
                continue
            if isinstance(count, bool) or not isinstance(count, int) or count < 0:
                raise ValueError(f"stock[{size!r}][{region!r}] must be a whole number >= 0")
            merged.setdefault(size, {})[region] = count
    return {size: regions for size, regions in merged.items() if regions}


def _check_rule(rule: Any) -> dict[str, Any]:
    if not isinstance(rule, dict):
        raise ValueError("each entry of `next` must be an object")
    allowed = {
        "method",
        "path",
        "status",
        "after_create",
        "delay_s",
        "retry_after",
        "times",
        "message",
    }
    unknown = set(rule) - allowed
    if unknown:
        raise ValueError(f"unknown key(s) in a `next` rule: {sorted(unknown)}")
    if "status" not in rule and "delay_s" not in rule:
        raise ValueError("a `next` rule needs `status` and/or `delay_s`")
    if "retry_after" in rule:
        retry_after = rule["retry_after"]
        if isinstance(retry_after, bool) or not isinstance(retry_after, int) or retry_after < 0:
            raise ValueError("`retry_after` must be a whole number of seconds, 0 or more")
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
    #: the droplet's create action; DELETE answers 422 "pending event" while it is in progress
    create_action_id: int | None = None
    #: set by a `shutdown`/`power_off` action: the droplet is `off` from this time on
    off_at: float | None = None

    @property
    def is_gpu(self) -> bool:
        return catalog.is_gpu_size(self.size_slug)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> EmuDroplet:
        agent = AgentInfo(**data.pop("agent", {}))
        return cls(**data, agent=agent)


def ssh_fingerprint(public_key: str) -> str | None:
    """DigitalOcean's fingerprint of an OpenSSH public key (MD5 of the key blob, colon hex);
    None when the text is not `type base64 [comment]`."""
    parts = public_key.strip().split()
    if len(parts) < 2 or not parts[0].startswith(("ssh-", "ecdsa-", "sk-")):
        return None
    try:
        blob = base64.b64decode(parts[1], validate=True)
    except (binascii.Error, ValueError):
        return None
    if len(blob) < 11:
        return None
    digest = hashlib.md5(blob, usedforsecurity=False).hexdigest()
    return ":".join(digest[i : i + 2] for i in range(0, 32, 2))


def iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class Store:
    """Droplets, their actions, the account's SSH keys and the faults, optionally persisted."""

    def __init__(self, *, state_file: Path | None, ip_mode: str = "testnet") -> None:
        self.state_file = state_file
        self.ip_mode = ip_mode
        self.droplets: dict[int, EmuDroplet] = {}
        #: action id -> {id, type, droplet_id, region, started_at, ends_at, outcome}
        self.actions: dict[int, dict[str, Any]] = {}
        #: key id -> {id, name, public_key, fingerprint}
        self.ssh_keys: dict[int, dict[str, Any]] = {}
        # The provider's own bill: every droplet ever created, when it started and stopped
        # existing. Tests check LabGPU's usage records against it (I-8), never against ours.
        self.ledger: dict[int, dict[str, Any]] = {}
        #: volume id (uuid) -> {id, name, region, size_gigabytes, droplet_ids, …}
        self.volumes: dict[str, dict[str, Any]] = {}
        #: snapshot id (uuid) -> DigitalOcean's snapshot object
        self.snapshots: dict[str, dict[str, Any]] = {}
        #: every volume ever created, with its sizes over time: the bill storage metering is
        #: checked against ({id, name, region, tags, sizes: [[since, gb]], created_at, deleted_at})
        self.volume_ledger: dict[str, dict[str, Any]] = {}
        #: size slug -> {"price_hourly": …, "price_monthly": …}: a price list change a test made
        self.price_overrides: dict[str, dict[str, float]] = {}
        self.faults = Faults()
        self.next_id = FIRST_DROPLET_ID
        self.next_action_id = 900_000_001
        self.next_key_id = FIRST_KEY_ID
        self.ip_counter = 0
        self.dirty = False
        if state_file and state_file.exists():
            self._load(state_file)

    # -- persistence ----------------------------------------------------------------------------

    def _load(self, path: Path) -> None:
        data = json.loads(path.read_text())
        self.next_id = int(data.get("next_id", FIRST_DROPLET_ID))
        self.next_action_id = int(data.get("next_action_id", self.next_action_id))
        self.next_key_id = int(data.get("next_key_id", FIRST_KEY_ID))
        self.ip_counter = int(data.get("ip_counter", 0))
        self.faults = Faults()
        self.faults.update(data.get("faults", {}))
        self.ledger = {int(k): v for k, v in data.get("ledger", {}).items()}
        for item in data.get("droplets", []):
            droplet = EmuDroplet.from_dict(dict(item))
            self.droplets[droplet.id] = droplet
        self.actions = {int(a["id"]): dict(a) for a in data.get("actions", [])}
        self.ssh_keys = {int(k["id"]): dict(k) for k in data.get("ssh_keys", [])}
        self.volumes = {v["id"]: dict(v) for v in data.get("volumes", [])}
        self.snapshots = {v["id"]: dict(v) for v in data.get("snapshots", [])}
        self.volume_ledger = dict(data.get("volume_ledger", {}))
        self.price_overrides = dict(data.get("price_overrides", {}))
        logger.info("loaded %d droplet(s) from %s", len(self.droplets), path)

    def save(self) -> None:
        self.dirty = False
        if not self.state_file:
            return
        data = {
            "version": 1,
            "next_id": self.next_id,
            "next_action_id": self.next_action_id,
            "next_key_id": self.next_key_id,
            "ip_counter": self.ip_counter,
            "faults": asdict(self.faults),
            # plain __dict__ copies: dataclasses.asdict deep-copies and is 10x slower here
            "droplets": [{**vars(d), "agent": dict(vars(d.agent))} for d in self.droplets.values()],
            "actions": list(self.actions.values()),
            "ssh_keys": list(self.ssh_keys.values()),
            "ledger": self.ledger,
            "volumes": list(self.volumes.values()),
            "snapshots": list(self.snapshots.values()),
            "volume_ledger": self.volume_ledger,
            "price_overrides": self.price_overrides,
        }
        self.state_file.parent.mkdir(parents=True, exist_ok=True)
        # write-then-rename so a crash never leaves a half-written state file
        fd, tmp = tempfile.mkstemp(dir=self.state_file.parent, prefix=".emulator-state-")
        with os.fdopen(fd, "w") as fh:
            fh.write(json.dumps(data, separators=(",", ":")))
        os.replace(tmp, self.state_file)

    def reset(self, *, stock: dict[str, dict[str, int]] | None = None) -> None:
        """Forget droplets, actions, keys and faults; `stock` is the start-up stock to restore."""
        self.droplets.clear()
        self.actions.clear()
        self.ssh_keys.clear()
        self.ledger.clear()
        self.volumes.clear()
        self.snapshots.clear()
        self.volume_ledger.clear()
        self.price_overrides.clear()
        self.faults = Faults()
        if stock:
            self.faults.update({"stock": stock})
        self.dirty = True

    def set_prices(self, changes: dict[str, Any]) -> None:
        """Change sizes' list prices (JSON numbers, as DigitalOcean sends them)."""
        for slug, prices in changes.items():
            if not isinstance(prices, dict) or not set(prices) <= {"price_hourly", "price_monthly"}:
                raise ValueError("give {slug: {price_hourly, price_monthly}}")
            for value in prices.values():
                if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
                    raise ValueError("prices are non-negative numbers")
            self.price_overrides.setdefault(str(slug), {}).update(prices)
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

    # -- SSH keys -------------------------------------------------------------------------------

    def add_ssh_key(self, body: Any) -> dict[str, Any]:
        """POST /v2/account/keys: the key gets an id and DigitalOcean's MD5 fingerprint."""
        if not isinstance(body, dict):
            raise ApiError(400, "bad_request", "The request body must be a JSON object.")
        name, public_key = body.get("name"), body.get("public_key")
        if not isinstance(name, str) or not name.strip():
            raise unprocessable("Name can't be blank.")
        if not isinstance(public_key, str):
            raise unprocessable("Public Key can't be blank.")
        fingerprint = ssh_fingerprint(public_key)
        if fingerprint is None:
            raise unprocessable("Key invalid, key should be of the format `type key [comment]`")
        if any(k["fingerprint"] == fingerprint for k in self.ssh_keys.values()):
            raise unprocessable("SSH Key is already in use on your account")
        key = {
            "id": self.next_key_id,
            "fingerprint": fingerprint,
            "public_key": public_key.strip(),
            "name": name,
        }
        self.next_key_id += 1
        self.ssh_keys[key["id"]] = key
        self.dirty = True
        return key

    def get_ssh_key(self, ref: str) -> dict[str, Any]:
        """`GET /v2/account/keys/{id or fingerprint}`."""
        for key in self.ssh_keys.values():
            if ref == str(key["id"]) or ref == key["fingerprint"]:
                return key
        raise not_found()

    def _known_key(self, ref: Any) -> bool:
        if isinstance(ref, bool):
            return False
        if isinstance(ref, int) or (isinstance(ref, str) and ref.isdigit()):
            return int(ref) in self.ssh_keys
        return isinstance(ref, str) and any(k["fingerprint"] == ref for k in self.ssh_keys.values())

    # -- stock ----------------------------------------------------------------------------------

    def in_stock(self, size: str, region: str) -> bool:
        free = self.faults.stock.get(size, {}).get(region)
        return free is None or free > 0

    def regions_with_stock(self, size: str) -> list[str]:
        return [r for r in catalog.SIZES_BY_SLUG[size]["regions"] if self.in_stock(size, r)]

    def _take_stock(self, size: str, region: str) -> None:
        regions = self.faults.stock.get(size)
        if regions is not None and region in regions:
            regions[region] -= 1

    def _return_stock(self, droplet: EmuDroplet) -> None:
        regions = self.faults.stock.get(droplet.size_slug)
        if regions is not None and droplet.region in regions:
            regions[droplet.region] += 1

    # -- actions --------------------------------------------------------------------------------

    def new_action_id(self) -> int:
        self.next_action_id += 1
        return self.next_action_id - 1

    def action_status(self, action: dict[str, Any], now: float | None = None) -> str:
        now = time.time() if now is None else now
        ends_at = action.get("ends_at")
        if ends_at is None or now < ends_at:
            return "in-progress"
        return str(action["outcome"])

    def pending_create(self, droplet: EmuDroplet, now: float | None = None) -> bool:
        action = self.actions.get(droplet.create_action_id or 0)
        return action is not None and self.action_status(action, now) == "in-progress"

    def action_json(self, action: dict[str, Any], now: float | None = None) -> dict[str, Any]:
        status = self.action_status(action, now)
        return {
            "id": action["id"],
            "status": status,
            "type": action["type"],
            "started_at": iso(action["started_at"]),
            "completed_at": iso(action["ends_at"]) if status != "in-progress" else None,
            "resource_id": action["droplet_id"],
            "resource_type": action.get("resource_type", "droplet"),
            "region": catalog.region_json(action["region"]),
            "region_slug": action["region"],
        }

    def has_running_action(self, droplet_id: int, now: float | None = None) -> bool:
        return any(
            a["droplet_id"] == droplet_id
            and a.get("resource_type", "droplet") == "droplet"
            and self.action_status(a, now) == "in-progress"
            for a in self.actions.values()
        )

    def all_actions(self) -> list[dict[str, Any]]:
        """`GET /v2/actions`: every action on the account, newest first."""
        return sorted(self.actions.values(), key=lambda a: -int(a["id"]))

    def get_action(self, action_id: int) -> dict[str, Any]:
        action = self.actions.get(action_id)
        if action is None:
            raise not_found()
        return action

    def droplet_actions(self, droplet_id: int) -> list[dict[str, Any]]:
        self.get(droplet_id)
        return sorted(
            (a for a in self.actions.values() if a["droplet_id"] == droplet_id),
            key=lambda a: -int(a["id"]),
        )

    # -- droplets -------------------------------------------------------------------------------

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
        image = catalog.find_image(body.get("image"))
        if image is None or region not in image["available_in"]:
            # DigitalOcean answers the same for an unknown image and one not in this region
            raise unprocessable(INVALID_IMAGE)
        user_data = body.get("user_data") or ""
        if not isinstance(user_data, str):
            raise unprocessable("user_data must be a string.")
        if len(user_data.encode()) > USER_DATA_LIMIT:
            raise unprocessable("user_data is limited to 64 KiB.")
        ssh_keys = body.get("ssh_keys") or []
        if not isinstance(ssh_keys, list):
            raise unprocessable("ssh_keys must be a list of key ids or fingerprints.")
        unknown = [key for key in ssh_keys if not self._known_key(key)]
        if unknown:
            # ids or fingerprints of keys on the account only: raw public keys and names fail too
            listed = ", ".join(str(k)[:60] for k in unknown)
            raise unprocessable(f"{listed} are invalid key identifiers for Droplet creation.")
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
            raise unprocessable(SIZE_UNAVAILABLE, available_regions=self.regions_with_stock(size))
        if size in self.faults.no_capacity_sizes:
            raise unprocessable(
                f"There is currently no capacity for {size} in {region}. Please try another "
                "region or try again later."
            )
        if not self.in_stock(size, region):
            raise unprocessable(SIZE_UNAVAILABLE, available_regions=self.regions_with_stock(size))
        volumes = self._volumes_for_create(body.get("volumes"), region)
        droplet_id = self.next_id
        self.next_id += 1
        boots = self.faults.boots(name)
        active_at = now + boot_delay_s if boots else None
        vanish_at = None
        if active_at is not None and self.faults.vanish_after_s is not None:
            vanish_at = active_at + self.faults.vanish_after_s
        action_id = self.new_action_id()
        # A droplet that never boots: its create event errors when the boot would have ended.
        self.actions[action_id] = {
            "id": action_id,
            "type": "create",
            "droplet_id": droplet_id,
            "region": region,
            "started_at": now,
            "ends_at": now + boot_delay_s,
            "outcome": "completed" if boots else "errored",
        }
        droplet = EmuDroplet(
            id=droplet_id,
            name=name,
            size_slug=size,
            region=region,
            image=image["slug"],
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
            create_action_id=action_id,
        )
        self.droplets[droplet_id] = droplet
        for volume in volumes:
            volume["droplet_ids"] = [droplet_id]
        self._take_stock(size, region)
        self.ledger[droplet_id] = {
            "id": droplet_id,
            "name": name,
            "tags": droplet.tags,
            "region": region,
            "size": size,
            "created_at": now,
            "delete_requested_at": None,
            "gone_at": None,
        }
        self.dirty = True
        return droplet

    def create_many(
        self, body: dict[str, Any], *, boot_delay_s: float, ip_delay_s: float
    ) -> list[EmuDroplet]:
        """`POST /v2/droplets` with `names`: "Up to ten Droplets may be created this way at a time"
        (the spec's droplets_create). All or none: a name that fails undoes the ones before it."""
        names = body.get("names")
        if "name" in body:
            raise unprocessable("Send either name or names, not both.")
        if not isinstance(names, list) or not 1 <= len(names) <= MAX_NAMES_PER_CREATE:
            raise unprocessable(f"names must list 1 to {MAX_NAMES_PER_CREATE} droplet names.")
        if body.get("volumes"):
            # a volume attaches to one droplet only (the spec's volume prose)
            raise unprocessable("Volumes cannot be attached when creating several droplets.")
        made: list[EmuDroplet] = []
        try:
            for name in names:
                single = {k: v for k, v in body.items() if k != "names"}
                made.append(
                    self.create(
                        {**single, "name": name}, boot_delay_s=boot_delay_s, ip_delay_s=ip_delay_s
                    )
                )
        except ApiError:
            for droplet in made:
                self._discard(droplet)
            raise
        return made

    def _discard(self, droplet: EmuDroplet) -> None:
        """Undo a create within the same request, as if it never happened."""
        self.droplets.pop(droplet.id, None)
        self.ledger.pop(droplet.id, None)
        self.actions.pop(droplet.create_action_id or 0, None)
        self._return_stock(droplet)
        self.dirty = True

    def _gone(self, droplet: EmuDroplet, at: float) -> None:
        # a destroyed droplet lets go of its volumes (they survive it, detached)
        for volume in self.volumes.values():
            if droplet.id in volume["droplet_ids"]:
                volume["droplet_ids"] = [d for d in volume["droplet_ids"] if d != droplet.id]
        entry = self.ledger.get(droplet.id)
        if entry is not None and entry["gone_at"] is None:
            entry["gone_at"] = at

    def get(self, droplet_id: int) -> EmuDroplet:
        droplet = self.droplets.get(droplet_id)
        if droplet is None:
            raise not_found()
        return droplet

    def delete(self, droplet_id: int, *, now: float | None = None) -> EmuDroplet:
        now = time.time() if now is None else now
        droplet = self.get(droplet_id)
        if self.pending_create(droplet, now):
            raise unprocessable(PENDING_EVENT)
        if droplet.gone_at is None:
            droplet.gone_at = now + self.faults.slow_delete_s
            droplet.status = "off"
            entry = self.ledger.get(droplet_id)
            if entry is not None:
                entry["delete_requested_at"] = now
            self.dirty = True
        return droplet

    def finish_create(self, droplet: EmuDroplet, now: float) -> None:
        """The admin `activate`: the boot, and so the create event, ends now."""
        droplet.active_at = now
        droplet.ip_at = min(droplet.ip_at, now)
        action = self.actions.get(droplet.create_action_id or 0)
        if action is not None and self.action_status(action, now) == "in-progress":
            action["ends_at"], action["outcome"] = now, "completed"
        self.dirty = True

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
        self._return_stock(droplet)
        self._gone(droplet, time.time())
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
                droplet.off_at is not None
                and now >= droplet.off_at
                and droplet.status == "active"
                and droplet.gone_at is None
            ):
                droplet.status = "off"
                self.dirty = True
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
            self._return_stock(droplet)
            self._gone(droplet, now)
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
            # True while an action on the droplet runs (its create event included): the spec's
            # "Droplet Actions" tag: "If a Droplet action is uncompleted … the locked attribute
            # of the Droplet will be true" (docs/providers.md weighs droplet_kit#218 against it).
            "locked": self.has_running_action(droplet.id, now),
            "status": droplet.status,
            "kernel": None,
            "created_at": iso(droplet.created_at),
            "features": ["droplet_agent", "private_networking"],
            "backup_ids": [],
            "next_backup_window": None,
            "snapshot_ids": [],
            "image": catalog.image_json(image),
            "volume_ids": [
                v["id"] for v in self.volumes.values() if droplet.id in v["droplet_ids"]
            ],
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

    # -- volumes --------------------------------------------------------------------------------
    # Where DigitalOcean's spec is silent, the emulator refuses (our choice, docs/providers.md):
    # attaching a volume to a droplet in another region, and deleting an attached volume.

    def volume_to_api(self, volume: dict[str, Any]) -> dict[str, Any]:
        return {
            "id": volume["id"],
            "region": catalog.region_json(volume["region"]),
            "droplet_ids": list(volume["droplet_ids"]),
            "name": volume["name"],
            "description": volume.get("description", ""),
            "size_gigabytes": volume["size_gigabytes"],
            "created_at": iso(volume["created_at"]),
            "filesystem_type": volume.get("filesystem_type", ""),
            "filesystem_label": volume.get("filesystem_label", ""),
            "tags": list(volume.get("tags", [])),
        }

    def get_volume(self, volume_id: str) -> dict[str, Any]:
        volume = self.volumes.get(volume_id)
        if volume is None:
            raise not_found()
        return volume

    def volume_listing(self, *, name: str | None, region: str | None) -> list[dict[str, Any]]:
        result = [
            v
            for v in self.volumes.values()
            if (name is None or v["name"] == name) and (region is None or v["region"] == region)
        ]
        return sorted(result, key=lambda v: (v["created_at"], v["id"]))

    def create_volume(self, body: Any, *, now: float | None = None) -> dict[str, Any]:
        now = time.time() if now is None else now
        if not isinstance(body, dict):
            raise ApiError(400, "bad_request", "The request body must be a JSON object.")
        name, region, size = body.get("name"), body.get("region"), body.get("size_gigabytes")
        if not isinstance(name, str) or not _VOLUME_NAME_RE.match(name):
            raise unprocessable(
                "Name must be lowercase, begin with a letter and contain only letters, numbers "
                "and '-', up to 64 characters."
            )
        if not isinstance(region, str) or region not in catalog.REGION_NAMES:
            raise unprocessable("You specified an invalid region for volume creation.")
        if isinstance(size, bool) or not isinstance(size, int) or not 1 <= size <= VOLUME_MAX_GB:
            raise unprocessable(f"size_gigabytes must be a whole number from 1 to {VOLUME_MAX_GB}.")
        fs_type = body.get("filesystem_type") or ""
        if fs_type not in {"", "ext4", "xfs"}:
            raise unprocessable("filesystem_type must be ext4 or xfs.")
        tags = body.get("tags") or []
        if not isinstance(tags, list) or not all(
            isinstance(t, str) and _TAG_RE.match(t) for t in tags
        ):
            raise unprocessable(
                "Tags may contain letters, numbers, colons, dashes and underscores."
            )
        snapshot_id = body.get("snapshot_id")
        if snapshot_id is not None:
            snapshot = self.snapshots.get(str(snapshot_id))
            if snapshot is None:
                raise not_found()
            if size < snapshot["min_disk_size"]:
                raise unprocessable("The volume must be at least as large as the snapshot.")
        if any(v["name"] == name and v["region"] == region for v in self.volumes.values()):
            # "You can only create one volume per region with the same name." DigitalOcean
            # answers 409 (terraform#8023, ansible#39655: id "conflict"/"already_exists").
            raise ApiError(409, "conflict", "a volume with this name already exists in the region")
        volume = {
            "id": str(uuid.uuid4()),
            "name": name,
            "region": region,
            "size_gigabytes": size,
            "description": str(body.get("description") or ""),
            "filesystem_type": fs_type,
            "filesystem_label": str(body.get("filesystem_label") or ""),
            "tags": list(dict.fromkeys(tags)),
            "droplet_ids": [],
            "created_at": now,
        }
        self.volumes[volume["id"]] = volume
        self.volume_ledger[volume["id"]] = {
            "id": volume["id"],
            "name": name,
            "region": region,
            "tags": volume["tags"],
            "sizes": [[now, size]],
            "created_at": now,
            "deleted_at": None,
        }
        self.dirty = True
        return volume

    def delete_volume(self, volume: dict[str, Any], *, now: float | None = None) -> None:
        if volume["droplet_ids"]:
            # the spec lists no 409/422 for this; we refuse rather than pull a disk from under a
            # running machine (docs/providers.md)
            raise unprocessable(
                "Volume is attached to a Droplet; detach it before deleting.",
                droplet_ids=list(volume["droplet_ids"]),
            )
        del self.volumes[volume["id"]]
        entry = self.volume_ledger.get(volume["id"])
        if entry is not None:
            entry["deleted_at"] = time.time() if now is None else now
        self.dirty = True

    def find_volume_by_name(self, name: Any, region: Any) -> dict[str, Any]:
        if not isinstance(name, str) or not name:
            raise unprocessable("The volume's name is required.")
        matches = [
            v
            for v in self.volumes.values()
            if v["name"] == name and (region is None or v["region"] == region)
        ]
        if not matches:
            raise not_found()
        if len(matches) > 1:
            raise unprocessable("Several volumes have this name; give the region as well.")
        return matches[0]

    def volume_action(
        self,
        volume: dict[str, Any],
        body: Any,
        *,
        delay_s: float,
        allowed: tuple[str, ...] = ("attach", "detach", "resize"),
        now: float | None = None,
    ) -> dict[str, Any]:
        """Start an attach/detach/resize; the change shows at once, the action completes after
        `delay_s`. An action type listed in the `volume_action_errors` fault ends `errored` and
        changes nothing."""
        now = time.time() if now is None else now
        if not isinstance(body, dict):
            raise ApiError(400, "bad_request", "The request body must be a JSON object.")
        kind = body.get("type")
        if kind not in allowed:
            raise unprocessable(f"type must be one of: {', '.join(allowed)}.")
        region = body.get("region")
        if region is not None and region != volume["region"]:
            raise unprocessable("region must be the region where the volume is located.")
        failing = kind in self.faults.volume_action_errors
        droplet_id = None
        if kind in {"attach", "detach"}:
            raw = body.get("droplet_id")
            if isinstance(raw, bool) or not isinstance(raw, int):
                raise unprocessable("droplet_id must be a Droplet's id.")
            droplet = self.get(raw)
            droplet_id = droplet.id
            if kind == "attach":
                self._check_attachable(volume, droplet)
                if not failing:
                    volume["droplet_ids"] = [droplet.id]
            else:
                if droplet.id not in volume["droplet_ids"]:
                    raise unprocessable("Volume is not attached to this Droplet.")
                if not failing:
                    volume["droplet_ids"] = []
        else:
            size = body.get("size_gigabytes")
            if isinstance(size, bool) or not isinstance(size, int) or size > VOLUME_MAX_GB:
                raise unprocessable(f"size_gigabytes must be a whole number up to {VOLUME_MAX_GB}.")
            if size <= volume["size_gigabytes"]:
                raise unprocessable("Volumes may only be resized upwards.")
            if not failing:
                volume["size_gigabytes"] = size
                entry = self.volume_ledger.get(volume["id"])
                if entry is not None:
                    entry["sizes"].append([now, size])
        action_id = self.new_action_id()
        action = {
            "id": action_id,
            "type": f"{kind}_volume" if kind != "resize" else "resize_volume",
            "droplet_id": droplet_id,
            "volume_id": volume["id"],
            "resource_type": "volume",
            "region": volume["region"],
            "started_at": now,
            "ends_at": now + delay_s,
            "outcome": "errored" if failing else "completed",
        }
        self.actions[action_id] = action
        self.dirty = True
        return action

    def _check_attachable(self, volume: dict[str, Any], droplet: EmuDroplet) -> None:
        if droplet.gone_at is not None:
            raise not_found()
        if volume["droplet_ids"]:
            # "Each volume may only be attached to a single Droplet."
            raise unprocessable(
                "Volume is already attached to a Droplet.", droplet_ids=list(volume["droplet_ids"])
            )
        if droplet.region != volume["region"]:
            # the spec is silent; volumes "can be moved between Droplets within a specific
            # region", so the emulator refuses across regions (docs/providers.md)
            raise unprocessable(
                f"Volume is in {volume['region']}, the Droplet in {droplet.region}: a volume can "
                "only be attached within its region."
            )
        attached = sum(1 for v in self.volumes.values() if droplet.id in v["droplet_ids"])
        if attached >= VOLUMES_PER_DROPLET:
            raise unprocessable("A Droplet can have at most fifteen volumes attached.")

    def _volumes_for_create(self, ids: Any, region: str) -> list[dict[str, Any]]:
        """`POST /v2/droplets` `volumes`: "must not already be attached to an existing Droplet"."""
        if ids is None:
            return []
        if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
            raise unprocessable("volumes must be a list of volume ids.")
        volumes = []
        for volume_id in dict.fromkeys(ids):
            volume = self.volumes.get(volume_id)
            if volume is None:
                raise unprocessable(f"Volume {volume_id} was not found.")
            if volume["droplet_ids"]:
                raise unprocessable(f"Volume {volume_id} is already attached to a Droplet.")
            if volume["region"] != region:
                raise unprocessable(
                    f"Volume {volume_id} is in {volume['region']}, not in {region}."
                )
            volumes.append(volume)
        if len(volumes) > VOLUMES_PER_DROPLET:
            raise unprocessable("A Droplet can have at most fifteen volumes attached.")
        return volumes

    def volume_actions(self, volume_id: str) -> list[dict[str, Any]]:
        return sorted(
            (a for a in self.actions.values() if a.get("volume_id") == volume_id),
            key=lambda a: -int(a["id"]),
        )

    def create_snapshot(
        self, volume: dict[str, Any], body: Any, *, now: float | None = None
    ) -> dict[str, Any]:
        now = time.time() if now is None else now
        if not isinstance(body, dict):
            raise ApiError(400, "bad_request", "The request body must be a JSON object.")
        name = body.get("name")
        if not isinstance(name, str) or not name.strip():
            raise unprocessable("Name can't be blank.")
        tags = body.get("tags") or []
        if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
            raise unprocessable("tags must be a list of strings.")
        snapshot = {
            "id": str(uuid.uuid4()),
            "name": name,
            "created_at": iso(now),
            "regions": [volume["region"]],
            "min_disk_size": volume["size_gigabytes"],
            "size_gigabytes": 0.0,
            "resource_id": volume["id"],
            "resource_type": "volume",
            "tags": list(tags),
        }
        self.snapshots[snapshot["id"]] = snapshot
        self.dirty = True
        return snapshot

    # -- droplet power actions ------------------------------------------------------------------

    def droplet_action(
        self, droplet_id: int, body: Any, *, delay_s: float, now: float | None = None
    ) -> dict[str, Any]:
        """`POST /v2/droplets/{id}/actions` for `shutdown` and `power_off` (the ones teardown uses:
        a graceful shutdown runs the node's shutdown hooks, e.g. unmounting /data)."""
        now = time.time() if now is None else now
        droplet = self.get(droplet_id)
        if not isinstance(body, dict):
            raise ApiError(400, "bad_request", "The request body must be a JSON object.")
        kind = body.get("type")
        if kind not in {"shutdown", "power_off"}:
            raise unprocessable("The emulator supports only the shutdown and power_off actions.")
        if self.pending_create(droplet, now):
            raise unprocessable(PENDING_EVENT)
        if droplet.status == "active" and droplet.off_at is None:
            droplet.off_at = now + (0.0 if kind == "power_off" else delay_s)
        elif kind == "power_off" and droplet.status == "active":
            droplet.off_at = min(droplet.off_at or now, now)
        action_id = self.new_action_id()
        action = {
            "id": action_id,
            "type": kind,
            "droplet_id": droplet_id,
            "region": droplet.region,
            "started_at": now,
            "ends_at": droplet.off_at if droplet.off_at is not None else now,
            "outcome": "completed",
        }
        self.actions[action_id] = action
        self.dirty = True
        return action
