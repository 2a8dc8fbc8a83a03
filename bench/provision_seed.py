"""Benchmark data for bench/provision_storm.py; prints JSON (tokens, pools) on stdout.

Run by provision_storm.py with cwd=backend/ and DATABASE_URL pointing at its throw-away database.
Not for production databases: it creates users with known tokens.

Layout: one emulator provider account (PSTORM_EMULATOR_URL), one MI300X ×1 instance type (agent
profile `mi300x`, which the emulator's healthy fixture passes), one pool per region the emulator
offers that size in (capacity enough for every booking), provisioning lead and teardown grace 0 and
a 1-minute grid, so a booking made now is due now. PSTORM_LABS labs × PSTORM_USERS_PER_LAB users,
each with an SSH key (cloud-init carries it, as in production) and a `book`-scoped token, and a
generous quota for this month and the next.
"""

import base64
import json
import math
import os
import struct
import sys
from decimal import Decimal

# cwd is the backend/ to benchmark.
sys.path.insert(0, os.getcwd())
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

import django

django.setup()

from django.db import transaction
from labgpu.accounts.models import Lab, Membership, User
from labgpu.accounts.services import ssh_key_add, token_create
from labgpu.catalog.models import InstanceType, NodePool, ProviderAccount
from labgpu.core.timeutils import month_start, next_month, now
from labgpu.quotas.models import Quota

SIZE = "gpu-mi300x1-192gb"
REGIONS = [
    "atl1",
    "tor1",
    "nyc2",
]  # where the emulator (and DigitalOcean) offer this size


def ed25519_public_key(seed: int, comment: str) -> str:
    """A well-formed OpenSSH ed25519 public key (random-looking bytes; nobody logs in with it)."""
    blob_type = b"ssh-ed25519"
    key = (seed.to_bytes(4, "big") * 8)[:32]
    blob = (
        struct.pack(">I", len(blob_type))
        + blob_type
        + struct.pack(">I", len(key))
        + key
    )
    return f"ssh-ed25519 {base64.b64encode(blob).decode()} {comment}"


def main() -> None:
    bookings = int(os.environ["PSTORM_BOOKINGS"])
    labs_n = int(os.environ.get("PSTORM_LABS", "4"))
    users_per_lab = int(os.environ.get("PSTORM_USERS_PER_LAB", "5"))
    with transaction.atomic():
        account = ProviderAccount.objects.create(
            name="Provision storm emulator",
            kind="emulator",
            api_base_url=os.environ["PSTORM_EMULATOR_URL"],
            token_env_var="LABGPU_PROVIDER_TOKEN_EMULATOR",
        )
        itype = InstanceType.objects.create(
            slug="mi300x-1",
            name="AMD MI300X ×1",
            provider_size=SIZE,
            image="gpu-amd-base",
            gpu_vendor="amd",
            gpu_model="MI300X",
            gpu_count=1,
            vram_gb_per_gpu=192,
            gpu_arch="gfx942",
            price_per_hour=Decimal("1.99"),
            agent_profile="mi300x",
            provider_account=account,
        )
        capacity = math.ceil(bookings / len(REGIONS))
        pools = [
            NodePool.objects.create(
                slug=f"pstorm-mi300x-{region}",
                name=f"MI300X ×1 · {region}",
                instance_type=itype,
                region=region,
                capacity=capacity,
                granularity_minutes=1,
                min_duration_minutes=1,
                max_duration_minutes=24 * 60,
                max_days_ahead=30,
                provisioning_lead_minutes=0,
                teardown_grace_minutes=0,
            )
            for region in REGIONS
        ]
        labs = [
            Lab.objects.create(name=f"Storm Lab {i}", slug=f"pstorm-{i}")
            for i in range(labs_n)
        ]
        users = []
        for lab in labs:
            for j in range(users_per_lab):
                user = User.objects.create(username=f"{lab.slug}-u{j}", timezone="UTC")
                Membership.objects.create(user=user, lab=lab, role="member")
                ssh_key_add(
                    user=user,
                    name="laptop",
                    public_key=ed25519_public_key(user.pk, f"{user.username}@lab"),
                )
                users.append(user)
        month = month_start(now())
        quotas = []
        for _ in range(2):
            quotas += [
                Quota(
                    lab=lab,
                    instance_type=itype,
                    month=month,
                    gpu_hours=Decimal(1_000_000),
                )
                for lab in labs
            ]
            month = next_month(month)
        Quota.objects.bulk_create(quotas)
        tokens = [
            token_create(user=u, name="provision-storm", scopes=["book"])[1]
            for u in users
        ]
    print(
        json.dumps(
            {"tokens": tokens, "pools": [p.pk for p in pools], "capacity": capacity}
        )
    )


if __name__ == "__main__":
    main()
