"""What the emulated account offers: sizes, regions and images, shaped like DigitalOcean's.

Prices and machine shapes are illustrative (close to DigitalOcean's public list in late 2026), not a
quote; the product always reads prices from the provider's live `GET /v2/sizes`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

REGION_NAMES = {
    "tor1": "Toronto 1",
    "atl1": "Atlanta 1",
    "nyc2": "New York 2",
    "nyc3": "New York 3",
    "ams3": "Amsterdam 3",
}
GPU_REGIONS = ["tor1", "atl1", "nyc2", "ams3"]
#: where the GPU base images are distributed (a create elsewhere answers 422 "invalid image")
AMD_GPU_REGIONS = ["atl1", "tor1", "nyc2"]
NVIDIA_GPU_REGIONS = ["atl1", "tor1", "nyc2", "ams3"]


def _disk_info(boot_gib: int, scratch_gib: int) -> list[dict[str, Any]]:
    info: list[dict[str, Any]] = [{"type": "local", "size": {"amount": boot_gib, "unit": "gib"}}]
    if scratch_gib:
        info.append({"type": "scratch", "size": {"amount": scratch_gib, "unit": "gib"}})
    return info


def _gpu_size(
    slug: str,
    description: str,
    *,
    count: int,
    model: str,
    vram_gib: int,
    vcpus: int,
    memory_gib: int,
    boot_gib: int,
    scratch_gib: int,
    price_hourly: float,
    regions: list[str],
) -> dict[str, Any]:
    return {
        "slug": slug,
        "memory": memory_gib * 1024,
        "vcpus": vcpus,
        "disk": boot_gib,
        "transfer": 15.0 if count == 1 else 60.0,
        "price_monthly": round(price_hourly * 672, 2),
        "price_hourly": price_hourly,
        "regions": regions,
        "available": True,
        "description": description,
        "disk_info": _disk_info(boot_gib, scratch_gib),
        "gpu_info": {"count": count, "model": model, "vram": {"amount": vram_gib, "unit": "gib"}},
    }


SIZES: list[dict[str, Any]] = [
    {
        "slug": "s-1vcpu-1gb",
        "memory": 1024,
        "vcpus": 1,
        "disk": 25,
        "transfer": 1.0,
        "price_monthly": 6.0,
        "price_hourly": 0.00893,
        "regions": ["ams3", "nyc3", "tor1"],
        "available": True,
        "description": "Basic",
        "disk_info": _disk_info(25, 0),
    },
    {
        "slug": "s-2vcpu-4gb",
        "memory": 4096,
        "vcpus": 2,
        "disk": 80,
        "transfer": 4.0,
        "price_monthly": 24.0,
        "price_hourly": 0.03571,
        "regions": ["ams3", "nyc3", "tor1"],
        "available": True,
        "description": "Basic",
        "disk_info": _disk_info(80, 0),
    },
    _gpu_size(
        "gpu-mi300x1-192gb",
        "AMD MI300X - 1X",
        count=1,
        model="amd_mi300x",
        vram_gib=192,
        vcpus=20,
        memory_gib=240,
        boot_gib=720,
        scratch_gib=5120,
        price_hourly=1.99,
        regions=["atl1", "tor1", "nyc2"],
    ),
    _gpu_size(
        "gpu-mi300x8-1536gb",
        "AMD MI300X - 8X",
        count=8,
        model="amd_mi300x",
        vram_gib=1536,
        vcpus=160,
        memory_gib=1920,
        boot_gib=2046,
        scratch_gib=40960,
        price_hourly=15.92,
        regions=["atl1", "tor1", "nyc2"],
    ),
    _gpu_size(
        "gpu-mi325x8-2048gb-contracted",
        "AMD MI325X - 8X (contracted)",
        count=8,
        model="amd_mi325x",
        vram_gib=2048,
        vcpus=160,
        memory_gib=1310,
        boot_gib=2046,
        scratch_gib=40960,
        price_hourly=18.32,
        regions=["atl1"],
    ),
    _gpu_size(
        "gpu-mi350x1-288gb",
        "AMD MI350X - 1X",
        count=1,
        model="amd_mi350x",
        vram_gib=288,
        vcpus=20,
        memory_gib=240,
        boot_gib=720,
        scratch_gib=5120,
        price_hourly=2.49,
        regions=["atl1"],
    ),
    _gpu_size(
        "gpu-mi350x8-2304gb",
        "AMD MI350X - 8X",
        count=8,
        model="amd_mi350x",
        vram_gib=2304,
        vcpus=160,
        memory_gib=1920,
        boot_gib=2046,
        scratch_gib=40960,
        price_hourly=19.92,
        regions=["atl1"],
    ),
    _gpu_size(
        "gpu-h100x1-80gb",
        "H100 GPU - 1X",
        count=1,
        model="nvidia_h100",
        vram_gib=80,
        vcpus=20,
        memory_gib=240,
        boot_gib=720,
        scratch_gib=5120,
        price_hourly=3.39,
        regions=["tor1", "nyc2", "ams3"],
    ),
    _gpu_size(
        "gpu-h200x1-141gb",
        "H200 GPU - 1X",
        count=1,
        model="nvidia_h200",
        vram_gib=141,
        vcpus=24,
        memory_gib=240,
        boot_gib=720,
        scratch_gib=5120,
        price_hourly=3.44,
        regions=["atl1", "nyc2"],
    ),
]
SIZES_BY_SLUG = {s["slug"]: s for s in SIZES}

IMAGES: list[dict[str, Any]] = [
    {
        "id": 170000001,
        "name": "AMD AI/ML Ready (ROCm 7)",
        "distribution": "Ubuntu",
        "slug": "gpu-amd-base",
        "public": True,
        "type": "base",
        "description": "Ubuntu 24.04 with ROCm 7.x preinstalled",
        "available_in": AMD_GPU_REGIONS,
    },
    {
        "id": 170000002,
        "name": "AI/ML Ready H100x1",
        "distribution": "Ubuntu",
        "slug": "gpu-h100x1-base",
        "public": True,
        "type": "base",
        "description": "GPU H100 1x Base Image",
        "available_in": NVIDIA_GPU_REGIONS,
    },
    {
        "id": 170000003,
        "name": "AI/ML Ready (NVIDIA)",
        "distribution": "Ubuntu",
        "slug": "gpu-h100x8-base",
        "public": True,
        "type": "base",
        "description": "GPU multi-GPU Base Image",
        "available_in": NVIDIA_GPU_REGIONS,
    },
    {
        "id": 170000004,
        "name": "24.04 (LTS) x64",
        "distribution": "Ubuntu",
        "slug": "ubuntu-24-04-x64",
        "public": True,
        "type": "base",
        "description": "Ubuntu 24.04 (LTS) x64",
        "available_in": list(REGION_NAMES),
    },
]


def find_image(ref: Any) -> dict[str, Any] | None:
    if ref is None or isinstance(ref, bool):
        return None
    for image in IMAGES:
        if ref in (image["slug"], image["id"]) or str(ref) == str(image["id"]):
            return image
    return None


def image_json(image: dict[str, Any]) -> dict[str, Any]:
    shown = {k: v for k, v in image.items() if k != "available_in"}
    return {
        **shown,
        # every region a create with it succeeds in (atl1 too: emulator.contract reads why)
        "regions": sorted(image["available_in"]),
        "created_at": "2026-09-01T12:00:00Z",
        "min_disk_size": 25,
        "size_gigabytes": 18.47,
        "tags": [],
        "status": "available",
    }


def region_json(slug: str, in_stock: Callable[[str, str], bool] | None = None) -> dict[str, Any]:
    """The region; with `in_stock(size, region)`, `sizes` leaves out sizes out of stock there."""
    return {
        "name": REGION_NAMES.get(slug, slug),
        "slug": slug,
        "features": ["backups", "ipv6", "metadata", "install_agent", "storage", "image_transfer"],
        "available": True,
        "sizes": [
            s["slug"]
            for s in SIZES
            if slug in s["regions"] and (in_stock is None or in_stock(s["slug"], slug))
        ],
    }


def size_json(size: dict[str, Any], regions_with_stock: list[str]) -> dict[str, Any]:
    """The size as `GET /v2/sizes` shows it: `regions` are where a create can succeed now, and
    `available` is false when that is nowhere (DigitalOcean's meaning of both fields)."""
    return {**size, "regions": regions_with_stock, "available": bool(regions_with_stock)}


def is_gpu_size(slug: str) -> bool:
    return bool(SIZES_BY_SLUG.get(slug, {}).get("gpu_info"))


#: Fixture profile of the agent started for a droplet of this size (first matching prefix wins).
DEFAULT_PROFILES: list[tuple[str, str]] = [
    ("gpu-mi300x8", "healthy-mi300x8"),
    ("gpu-mi300x", "healthy-mi300x"),
    # No published MI325X output was found: its sizes replay an MI300X (they fail gpu.model).
    ("gpu-mi325x", "healthy-mi300x"),
    ("gpu-mi350x8", "healthy-mi350x8"),
    ("gpu-mi350x", "healthy-mi350x"),
    ("gpu-h200", "healthy-h200"),
    ("gpu-h100", "healthy-h100"),
]
FALLBACK_PROFILE = "healthy-mi300x"


def default_profile(size_slug: str) -> str:
    for prefix, profile in DEFAULT_PROFILES:
        if size_slug.startswith(prefix):
            return profile
    return FALLBACK_PROFILE
