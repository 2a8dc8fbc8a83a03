"""Benchmark data for bench/booking_storm.py; prints JSON (tokens, pools) on stdout.

Run by booking_storm.py with cwd=backend/ and DATABASE_URL pointing at the throw-away benchmark
database. Not for production databases: it creates users with known tokens.

Layout: LABS labs with USERS_PER_LAB members each (one membership, so no `lab` field is needed and
no per-member limits), POOLS pools (granularity 30 min, capacity CAPACITY, max_days_ahead DAYS+30)
spread over the instance types, and a generous quota for every lab × instance type × month the
storm can touch. Quota rows are locked per lab × instance type × month, and the pool row per pool,
so spreading labs, types and months keeps those locks from serialising unrelated creates.
"""

import json
import os
import sys
from datetime import timedelta
from decimal import Decimal

# cwd is the backend/ to benchmark: the working tree's, or a `git archive` of --ref.
sys.path.insert(0, os.getcwd())
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

import django

django.setup()

from django.db import transaction
from labgpu.accounts.models import Lab, Membership, User
from labgpu.accounts.services import token_create
from labgpu.catalog.models import InstanceType, NodePool, ProviderAccount
from labgpu.core.timeutils import month_start, next_month, now
from labgpu.quotas.models import Quota

TYPES = [
    (
        "mi300x-1",
        "AMD MI300X ×1",
        "gpu-mi300x1-192gb",
        "amd",
        "MI300X",
        192,
        "gfx942",
        "1.99",
    ),
    (
        "mi350x-1",
        "AMD MI350X ×1",
        "gpu-mi350x1-288gb",
        "amd",
        "MI350X",
        288,
        "gfx950",
        "2.49",
    ),
    (
        "h100-1",
        "NVIDIA H100 ×1",
        "gpu-h100x1-80gb",
        "nvidia",
        "H100",
        80,
        "9.0",
        "3.39",
    ),
    (
        "h200-1",
        "NVIDIA H200 ×1",
        "gpu-h200x1-141gb",
        "nvidia",
        "H200",
        141,
        "9.0",
        "3.44",
    ),
]
REGIONS = ["tor1", "atl1", "nyc2", "ams3", "sfo3", "fra1", "blr1", "syd1"]


def main() -> None:
    pools_n = int(os.environ["STORM_POOLS"])
    labs_n = int(os.environ.get("STORM_LABS", "8"))
    users_per_lab = int(os.environ.get("STORM_USERS_PER_LAB", "4"))
    capacity = int(os.environ.get("STORM_CAPACITY", "8"))
    days = int(os.environ["STORM_DAYS"])
    with transaction.atomic():
        account = ProviderAccount.objects.create(
            name="Bench emulator",
            kind="emulator",
            api_base_url="http://127.0.0.1:8010",
            token_env_var="LABGPU_PROVIDER_TOKEN_EMULATOR",
        )
        types = [
            InstanceType.objects.create(
                slug=slug,
                name=name,
                provider_size=size,
                image="gpu-amd-base" if vendor == "amd" else "gpu-h100x1-base",
                gpu_vendor=vendor,
                gpu_model=model,
                gpu_count=1,
                vram_gb_per_gpu=vram,
                gpu_arch=arch,
                price_per_hour=Decimal(price),
                provider_account=account,
            )
            for slug, name, size, vendor, model, vram, arch, price in TYPES
        ]
        pools = []
        for i in range(pools_n):
            itype = types[i % len(types)]
            region = REGIONS[i % len(REGIONS)]
            pools.append(
                NodePool.objects.create(
                    slug=f"bench-{itype.slug}-{region}-{i}",
                    name=f"{itype.gpu_model} ×1 · {region} #{i}",
                    instance_type=itype,
                    region=region,
                    capacity=capacity,
                    granularity_minutes=30,
                    min_duration_minutes=30,
                    max_duration_minutes=24 * 60,
                    max_days_ahead=days + 30,
                )
            )
        labs = [
            Lab.objects.create(name=f"Bench Lab {i}", slug=f"bench-{i}")
            for i in range(labs_n)
        ]
        users = []
        for lab in labs:
            for j in range(users_per_lab):
                user = User.objects.create(username=f"{lab.slug}-u{j}", timezone="UTC")
                Membership.objects.create(user=user, lab=lab, role="member")
                users.append(user)
        month, last = month_start(now()), month_start(now() + timedelta(days=days + 3))
        quotas = []
        while month <= last:
            quotas += [
                Quota(
                    lab=lab,
                    instance_type=itype,
                    month=month,
                    gpu_hours=Decimal(10_000_000),
                )
                for lab in labs
                for itype in types
            ]
            month = next_month(month)
        Quota.objects.bulk_create(quotas)
        tokens = [
            token_create(user=user, name="booking-storm", scopes=["book"])[1]
            for user in users
        ]
    print(
        json.dumps(
            {
                "tokens": tokens,
                "pools": [{"id": p.pk, "capacity": p.capacity} for p in pools],
                "labs": labs_n,
                "users": len(users),
                "quota_rows": len(quotas),
            }
        )
    )


if __name__ == "__main__":
    main()
