"""Emulator settings: command-line flags, each with a `LABGPU_EMULATOR_*` environment fallback."""

from __future__ import annotations

import argparse
import os
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

ENV_PREFIX = "LABGPU_EMULATOR_"

#: Seconds from create until a GPU droplet is `active`. DigitalOcean publishes no figure; GPU
#: droplets take minutes (large images, scratch disks), so the default is five. Tests and the
#: `make run` demo pass a shorter `--boot-delay`, and the emulator then says so in its log.
REALISTIC_BOOT_DELAY_S = 300.0


@dataclass
class EmulatorSettings:
    host: str = "127.0.0.1"
    port: int = 8010
    #: JSON file holding droplets, faults and id counters; None keeps state in memory only.
    state_file: Path | None = None
    #: seconds from create until a droplet turns `active` (and its create event completes)
    boot_delay_s: float = REALISTIC_BOOT_DELAY_S
    #: seconds from create until a public IPv4 appears (DigitalOcean assigns it while `new`)
    ip_delay_s: float = 1.0
    #: seconds a volume attach/detach/resize action stays `in-progress` (the change itself
    #: shows at once); DigitalOcean's take a few seconds
    volume_action_s: float = 3.0
    #: seconds from a `shutdown` droplet action until the droplet is `off`
    shutdown_s: float = 5.0
    #: per-token burst limit: `rate_limit` requests per `rate_window_s` (DigitalOcean: 250/min)
    rate_limit: int = 250
    rate_window_s: float = 60.0
    #: per-token quota (DigitalOcean: 5,000/hour); the `ratelimit-*` headers describe this one
    rate_limit_hourly: int = 5000
    rate_window_hourly_s: float = 3600.0
    #: start-up stock, size -> region -> free machines (see `state.Faults.stock`); {} = unlimited
    stock: dict[str, dict[str, int]] = field(default_factory=dict)
    #: start-up `state.Faults.idle_after`, droplet tag -> heartbeats before its agent goes idle
    idle_after: dict[str, int] = field(default_factory=dict)
    #: largest `per_page` honoured (DigitalOcean: 200); smaller values make pagination cheap to test
    max_per_page: int = 200
    #: accepted bearer tokens; empty accepts any non-empty token
    tokens: list[str] = field(default_factory=list)
    #: command that starts the node agent (split like a shell would); "" disables agents
    agent_cmd: str = "labgpu-agent"
    #: "testnet" hands out 192.0.2.x/198.51.100.x/203.0.113.x, "loopback" 127.x.y.z
    ip_mode: str = "testnet"
    #: base of the URLs in `links.pages`; None uses the URL the request came in on
    public_url: str | None = None
    #: seconds between background ticks (boot, vanish, delete completion)
    tick_s: float = 0.1
    log_level: str = "info"

    def public(self) -> dict[str, Any]:
        data = asdict(self)
        data["state_file"] = str(self.state_file) if self.state_file else None
        data["tokens"] = f"{len(self.tokens)} configured" if self.tokens else "any"
        return data

    def update(self, changes: dict[str, Any]) -> None:
        """Apply runtime changes (POST /_emulator/settings); host/port/state_file are fixed."""
        names = {f.name: f for f in fields(self)}
        for key, value in changes.items():
            if key not in names or key in {"host", "port", "state_file", "stock", "idle_after"}:
                raise ValueError(
                    f"unknown or fixed setting: {key}"
                    + (
                        f" (change {key} through POST /_emulator/faults)"
                        if key in {"stock", "idle_after"}
                        else ""
                    )
                )
            current = getattr(self, key)
            if key == "tokens":
                if not isinstance(value, list) or not all(isinstance(t, str) for t in value):
                    raise ValueError("tokens must be a list of strings")
                setattr(self, key, value)
            elif isinstance(current, bool) or current is None:
                setattr(self, key, value)
            elif isinstance(current, (int, float)) and not isinstance(current, bool):
                setattr(self, key, type(current)(value))
            else:
                setattr(self, key, value)


def parse_args(argv: list[str] | None = None) -> EmulatorSettings:
    defaults = EmulatorSettings()

    def env(name: str, default: Any) -> Any:
        return os.environ.get(ENV_PREFIX + name.upper(), default)

    p = argparse.ArgumentParser(
        prog="python -m emulator",
        description="A local server that speaks the DigitalOcean API subset LabGPU uses.",
    )
    p.add_argument("--host", default=env("host", defaults.host))
    p.add_argument("--port", type=int, default=int(env("port", defaults.port)))
    p.add_argument("--state-file", type=Path, default=env("state_file", None))
    p.add_argument(
        "--boot-delay", type=float, default=float(env("boot_delay_s", defaults.boot_delay_s))
    )
    p.add_argument(
        "--volume-action-delay",
        type=float,
        default=float(env("volume_action_s", defaults.volume_action_s)),
    )
    p.add_argument(
        "--shutdown-delay", type=float, default=float(env("shutdown_s", defaults.shutdown_s))
    )
    p.add_argument("--ip-delay", type=float, default=float(env("ip_delay_s", defaults.ip_delay_s)))
    p.add_argument("--rate-limit", type=int, default=int(env("rate_limit", defaults.rate_limit)))
    p.add_argument(
        "--rate-window", type=float, default=float(env("rate_window_s", defaults.rate_window_s))
    )
    p.add_argument(
        "--rate-limit-hourly",
        type=int,
        default=int(env("rate_limit_hourly", defaults.rate_limit_hourly)),
    )
    p.add_argument(
        "--rate-window-hourly",
        type=float,
        default=float(env("rate_window_hourly_s", defaults.rate_window_hourly_s)),
    )
    p.add_argument(
        "--stock",
        action="append",
        default=[t for t in env("stock", "").split(",") if t],
        metavar="SIZE@REGION=N",
        help="free machines of SIZE in REGION (repeatable); default: unlimited",
    )
    p.add_argument(
        "--idle-after",
        action="append",
        default=[t for t in env("idle_after", "").split(",") if t],
        metavar="TAG=N",
        help="agents of droplets tagged TAG report idle GPUs after N heartbeats (repeatable)",
    )
    p.add_argument(
        "--max-per-page", type=int, default=int(env("max_per_page", defaults.max_per_page))
    )
    p.add_argument(
        "--token",
        action="append",
        default=[t for t in env("tokens", "").split(",") if t],
        help="accepted bearer token (repeatable); default: any non-empty token",
    )
    p.add_argument("--agent-cmd", default=env("agent_cmd", defaults.agent_cmd))
    p.add_argument(
        "--ip-mode", choices=["testnet", "loopback"], default=env("ip_mode", defaults.ip_mode)
    )
    p.add_argument("--public-url", default=env("public_url", None))
    p.add_argument("--tick", type=float, default=float(env("tick_s", defaults.tick_s)))
    p.add_argument("--log-level", default=env("log_level", defaults.log_level))
    a = p.parse_args(argv)
    return EmulatorSettings(
        host=a.host,
        port=a.port,
        state_file=Path(a.state_file) if a.state_file else None,
        boot_delay_s=a.boot_delay,
        ip_delay_s=a.ip_delay,
        volume_action_s=a.volume_action_delay,
        shutdown_s=a.shutdown_delay,
        rate_limit=a.rate_limit,
        rate_window_s=a.rate_window,
        rate_limit_hourly=a.rate_limit_hourly,
        rate_window_hourly_s=a.rate_window_hourly,
        stock=parse_stock(a.stock, p),
        idle_after=parse_idle_after_flags(a.idle_after, p),
        max_per_page=a.max_per_page,
        tokens=list(a.token),
        agent_cmd=a.agent_cmd,
        ip_mode=a.ip_mode,
        public_url=a.public_url,
        tick_s=a.tick,
        log_level=a.log_level,
    )


def parse_stock(items: list[str], parser: argparse.ArgumentParser) -> dict[str, dict[str, int]]:
    """`["gpu-mi300x1-192gb@tor1=0", …]` -> {size: {region: n}}, checked like a runtime change."""
    from .state import merge_stock

    changes: dict[str, dict[str, int]] = {}
    for item in items:
        target, _, count = item.partition("=")
        size, _, region = target.partition("@")
        if not (size and region and count.strip().isdigit()):
            parser.error(f"--stock wants SIZE@REGION=N, got {item!r}")
        changes.setdefault(size.strip(), {})[region.strip()] = int(count)
    try:
        return merge_stock({}, changes)
    except ValueError as exc:
        parser.error(str(exc))
        raise  # unreachable: parser.error exits


def parse_idle_after_flags(items: list[str], parser: argparse.ArgumentParser) -> dict[str, int]:
    """`["labgpu-type-h100-1=4", …]` -> {tag: heartbeats}."""
    parsed: dict[str, int] = {}
    for item in items:
        tag, _, beats = item.partition("=")
        if not tag.strip() or not beats.strip().isdigit():
            parser.error(f"--idle-after wants TAG=N, got {item!r}")
        parsed[tag.strip()] = int(beats)
    return parsed
