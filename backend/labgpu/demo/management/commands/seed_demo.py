"""Demo data: people, labs, the GPU catalog, pools, quotas, a few bookings and a few weeks of
history (labgpu.demo.history). Safe to re-run."""

import json
import os
from datetime import datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from labgpu.accounts.models import Lab, Membership, User
from labgpu.accounts.services import token_create
from labgpu.bookings.models import Booking
from labgpu.bookings.services import booking_approve, booking_create, booking_extend
from labgpu.bookings.services.series import recurrence_of, series_create
from labgpu.budgets.models import Budget, CostCentre
from labgpu.budgets.selectors import budget_current
from labgpu.budgets.services import (
    budget_create,
    budget_update,
    cost_centre_create,
    cost_centre_default_set,
)
from labgpu.catalog.models import InstanceType, NodePool, ProviderAccount
from labgpu.chat import crypto as chat_crypto
from labgpu.chat import kinds as chat_kinds
from labgpu.chat.models import ChatChannel
from labgpu.core.errors import ApplicationError
from labgpu.core.timeutils import ceil_to_grid, month_start, next_month, now
from labgpu.demo.history import seed_history, seed_quota_request
from labgpu.provisioning.services.nodes import booking_tag
from labgpu.quotas.models import Quota
from labgpu.waitlist.models import WaitlistEntry
from labgpu.waitlist.services import waitlist_join

DEMO_PASSWORD = "labgpu-demo"
EMULATOR_ACCOUNT = "Local emulator"
# `make run`'s chat sink (manage.py chat_sink, in the Procfile) prints what this channel posts.
DEMO_CHAT_CHANNEL = "Demo chat sink (make run console)"
DEMO_CHAT_SECRET = "labgpu-demo-chat-secret"


def demo_emulator_url() -> str:
    """Where `make run` starts the emulator: EMULATOR_PORT (Makefile, Procfile), else 8010."""
    raw = os.environ.get("EMULATOR_PORT", "").strip() or "8010"
    if not raw.isdigit() or not 1 <= int(raw) <= 65535:
        raise CommandError(f"EMULATOR_PORT must be a port number (1-65535), not {raw!r}.")
    return f"http://127.0.0.1:{int(raw)}"


# (username, first name, role, lab slug, time zone, language)
PEOPLE = [
    ("carol", "Carol", "site_admin", None, "Europe/Berlin", "en"),
    ("bob", "Bob", "lab_admin", "vision", "Asia/Shanghai", "zh-hans"),
    ("alice", "Alice", "member", "vision", "Asia/Shanghai", "zh-hans"),
    ("dave", "Dave", "lab_admin", "language", "America/Toronto", "en"),
    ("erin", "Erin", "member", "language", "America/Toronto", "en"),
    ("mallory", "Mallory", "member", "language", "Europe/London", "en"),
]
LABS = {"vision": "Vision Lab", "language": "Language Lab"}
SERIES_DEMO_PURPOSE = "[demo] Weekly evaluation run"
WAITLIST_DEMO_PURPOSE = "[demo] Waiting for the H200: long-context eval"

# GPU facts from docs/gpu-facts.md. Prices are DigitalOcean list prices per droplet-hour at the
# time of writing; site admins should copy the live `price_hourly` from GET /v2/sizes.
INSTANCE_TYPES: list[dict[str, Any]] = [
    dict(
        slug="mi300x-1",
        name="AMD MI300X ×1",
        provider_size="gpu-mi300x1-192gb",
        image="gpu-amd-base",
        gpu_vendor="amd",
        gpu_model="MI300X",
        gpu_count=1,
        vram_gb_per_gpu=192,
        gpu_arch="gfx942",
        price_per_hour=Decimal("1.99"),
        agent_profile="mi300x",
        expected_baselines={"matmul_bf16_tflops": 600, "memory_bandwidth_tbs": 4.0},
    ),
    dict(
        slug="mi300x-8",
        name="AMD MI300X ×8",
        provider_size="gpu-mi300x8-1536gb",
        image="gpu-amd-base",
        gpu_vendor="amd",
        gpu_model="MI300X",
        gpu_count=8,
        vram_gb_per_gpu=192,
        gpu_arch="gfx942",
        price_per_hour=Decimal("15.92"),
        agent_profile="mi300x",
        expected_baselines={"matmul_bf16_tflops": 600, "memory_bandwidth_tbs": 4.0},
    ),
    dict(
        slug="mi325x-8",
        name="AMD MI325X ×8",
        provider_size="gpu-mi325x8-2048gb-contracted",
        image="gpu-amd-base",
        gpu_vendor="amd",
        gpu_model="MI325X",
        gpu_count=8,
        vram_gb_per_gpu=256,
        gpu_arch="gfx942",
        price_per_hour=Decimal("13.52"),
        agent_profile="mi325x",
        expected_baselines={"matmul_bf16_tflops": 650, "memory_bandwidth_tbs": 4.5},
    ),
    dict(
        slug="mi350x-1",
        name="AMD MI350X ×1",
        provider_size="gpu-mi350x1-288gb",
        image="gpu-amd-base",
        gpu_vendor="amd",
        gpu_model="MI350X",
        gpu_count=1,
        vram_gb_per_gpu=288,
        gpu_arch="gfx950",
        price_per_hour=Decimal("2.49"),
        agent_profile="mi350x",
        expected_baselines={"matmul_bf16_tflops": 900, "memory_bandwidth_tbs": 6.0},
    ),
    dict(
        slug="h100-1",
        name="NVIDIA H100 ×1",
        provider_size="gpu-h100x1-80gb",
        image="gpu-h100x1-base",
        gpu_vendor="nvidia",
        gpu_model="H100",
        gpu_count=1,
        vram_gb_per_gpu=80,
        gpu_arch="9.0",
        price_per_hour=Decimal("3.39"),
        agent_profile="h100",
        expected_baselines={"matmul_bf16_tflops": 600, "memory_bandwidth_tbs": 2.5},
    ),
    dict(
        slug="h200-1",
        name="NVIDIA H200 ×1",
        provider_size="gpu-h200x1-141gb",
        image="gpu-h100x1-base",
        gpu_vendor="nvidia",
        gpu_model="H200",
        gpu_count=1,
        vram_gb_per_gpu=141,
        gpu_arch="9.0",
        price_per_hour=Decimal("3.44"),
        agent_profile="h200",
        expected_baselines={"matmul_bf16_tflops": 650, "memory_bandwidth_tbs": 3.8},
    ),
]

POOLS: list[dict[str, Any]] = [
    dict(slug="mi300x-tor1", name="MI300X ×1 · tor1", type="mi300x-1", region="tor1", capacity=4),
    dict(
        slug="mi350x-atl1",
        name="MI350X ×1 · atl1",
        type="mi350x-1",
        region="atl1",
        capacity=2,
        requires_approval=True,
    ),
    dict(slug="h200-nyc2", name="H200 ×1 · nyc2", type="h200-1", region="nyc2", capacity=1),
    dict(
        slug="mi325x8-atl1",
        name="MI325X ×8 · atl1",
        type="mi325x-8",
        region="atl1",
        capacity=1,
        granularity_minutes=60,
        min_duration_minutes=60,
    ),
    # The pool that offers volumes: each user's /data outlives the node (alice's live node below
    # mounts hers); the others show a pool without one.
    dict(
        slug="h100-tor1",
        name="H100 ×1 · tor1",
        type="h100-1",
        region="tor1",
        capacity=2,
        volume_scope=NodePool.VolumeScope.USER,
    ),
]
VOLUME_DEMO_POOL = "h100-tor1"

# An approved booking of alice's in the approval pool whose extension waits for bob (her lab's
# admin) in his approval queue: (pool slug, days ahead, hours, hours asked on top, purpose)
EXTENSION_DEMO = ("mi350x-atl1", 4, 4, 2, "[demo] Video diffusion ablations (longer run asked)")

# Bookings that run now, made on every `make run` start (`seed_demo --live`) unless the last ones
# still run: the emulator's fixture agents report varying utilisation on their booking pages, and
# alice's forgotten notebook goes idle after a few heartbeats (--idle-file names its booking's
# droplet tag for the emulator's --idle-after: that one node, not every node of its type), so its
# pool's idle policy (which --live turns on: 5 minutes, then 30 of grace) warns alice in the app,
# by mail and in the chat sink's console. Without --live (e2e, benches) every pool's policy stays
# off, as it is by default. (username, pool slug, hours, purpose)
LIVE_PURPOSE = "[demo live]"
LIVE = [
    ("erin", "mi300x-tor1", 3, f"{LIVE_PURPOSE} Whisper fine-tuning (busy)"),
    ("dave", "mi300x-tor1", 2, f"{LIVE_PURPOSE} Retrieval index build (busy)"),
    ("alice", "h100-tor1", 3, f"{LIVE_PURPOSE} Forgotten notebook (goes idle)"),
]
IDLE_DEMO_POOL = "h100-tor1"
IDLE_DEMO_PURPOSE = LIVE[-1][3]  # alice's forgotten notebook
#: heartbeats before the idle demo booking's agent reports idle GPUs (two minutes)
IDLE_DEMO_HEARTBEATS = 4


class Command(BaseCommand):
    help = "Create (or complete) the demo data; --json prints users with fresh tokens and pools."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--json", action="store_true", help="Print users and pools as JSON.")
        parser.add_argument(
            "--emulator-only",
            action="store_true",
            help="Only point the demo emulator account at EMULATOR_PORT (make run, every start).",
        )
        parser.add_argument(
            "--live",
            action="store_true",
            help="Start the demo's bookings that run now unless they still run (make run, every "
            "start; with --emulator-only, nothing else).",
        )
        parser.add_argument(
            "--idle-file",
            help="With --live: write the emulator's TAG=N for the one demo booking that goes idle "
            "(make run passes it on as LABGPU_EMULATOR_IDLE_AFTER); empty when there is none.",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if options["emulator_only"]:
            url = self._point_emulator()
            self.stdout.write(f"{EMULATOR_ACCOUNT}: {url}")
            if options["live"]:
                self._live_bookings()
                self._write_idle_file(options["idle_file"])
            return
        with transaction.atomic():
            users = self._people()
            pools = self._catalog()
            self._quotas()
            self._chat_channel(users)
        self._bookings(users, pools)
        self._extension_request(users, pools)
        self._weekly_series(users, pools)
        self._waiting_entry(users, pools)
        seed_history(users=users, pools=pools)
        seed_quota_request(users=users, pools=pools)
        self._budgets(users)
        if options["live"]:
            self._live_bookings()
            self._write_idle_file(options["idle_file"])
        if options["json"]:
            self.stdout.write(json.dumps(self._summary(users, pools), indent=2))
        else:
            self.stdout.write(
                self.style.SUCCESS(
                    f"Demo data ready: {len(users)} users (password {DEMO_PASSWORD!r}), "
                    f"{len(pools)} pools."
                )
            )

    def _budgets(self, users: dict[str, User]) -> None:
        """The Vision Lab's grant as a cost centre (alice's default), and the Language Lab near
        its soft monthly budget: this month's bookings come to about 85 % of it, so the
        dashboard's bar and the booking form show a lab close to its limit."""
        vision = Lab.objects.get(slug="vision")
        language = Lab.objects.get(slug="language")
        grant = CostCentre.objects.filter(lab=vision, code="NSF-2231").first()
        if grant is None:
            grant = cost_centre_create(
                actor=users["bob"], lab=vision, code="NSF-2231", name="Vision grant"
            )
            cost_centre_create(actor=users["bob"], lab=vision, code="P-ROBOT", name="Robotics")
        cost_centre_default_set(
            actor=users["bob"], lab=vision, user=users["alice"], cost_centre=grant
        )
        budget = Budget.objects.filter(lab=language, cost_centre=None).first()
        if budget is None:
            budget = budget_create(actor=users["dave"], lab=language, amount=Decimal(1))
        projected = budget_current(budget, now()).spend.total
        amount = max(Decimal(10), (projected / Decimal("0.85")).quantize(Decimal(1)))
        budget_update(actor=users["dave"], budget=budget, amount=amount)

    def _people(self) -> dict[str, User]:
        labs = {
            slug: Lab.objects.get_or_create(slug=slug, defaults={"name": name})[0]
            for slug, name in LABS.items()
        }
        users = {}
        for username, first, role, lab_slug, tz, language in PEOPLE:
            user, created = User.objects.get_or_create(
                username=username,
                defaults={
                    "first_name": first,
                    "email": f"{username}@example.org",
                    "verified_email": f"{username}@example.org",
                    "timezone": tz,
                    "language": language,
                    "is_staff": role == "site_admin",
                    "is_superuser": role == "site_admin",
                },
            )
            if created:
                user.set_password(DEMO_PASSWORD)
                user.save(update_fields=["password"])
            if lab_slug:
                Membership.objects.get_or_create(
                    user=user,
                    lab=labs[lab_slug],
                    defaults={"role": "lab_admin" if role == "lab_admin" else "member"},
                )
            users[username] = user
        return users

    def _chat_channel(self, users: dict[str, User]) -> None:
        """Alice's signed webhook to the local chat sink: her bookings' news shows in the console.
        Written as a row (demo data, trusted): the service would refuse a loopback address unless
        LABGPU_CHAT_ALLOW_LOOPBACK is on, which `make run` sets for the worker that delivers."""
        alice = users["alice"]
        if ChatChannel.objects.filter(user=alice, name=DEMO_CHAT_CHANNEL).exists():
            return
        url = f"http://127.0.0.1:{os.environ.get('CHAT_SINK_PORT', '8026')}/labgpu"
        ChatChannel.objects.create(
            name=DEMO_CHAT_CHANNEL,
            kind=ChatChannel.Kind.WEBHOOK,
            user=alice,
            created_by=alice,
            secret_box=chat_crypto.seal({"url": url, "secret": DEMO_CHAT_SECRET}),
            hint=chat_kinds.hint(url),
            language=alice.language,
            timezone=alice.timezone,
        )

    def _point_emulator(self) -> str:
        """The demo account follows the emulator port: a stale one leaves bookings provisioning."""
        url = demo_emulator_url()
        ProviderAccount.objects.filter(name=EMULATOR_ACCOUNT, kind="emulator").exclude(
            api_base_url=url
        ).update(api_base_url=url)
        return url

    def _catalog(self) -> dict[str, NodePool]:
        emulator, _ = ProviderAccount.objects.get_or_create(
            name=EMULATOR_ACCOUNT,
            defaults={
                "kind": "emulator",
                "api_base_url": demo_emulator_url(),
                "token_env_var": "LABGPU_PROVIDER_TOKEN_EMULATOR",
            },
        )
        self._point_emulator()
        emulator.refresh_from_db()
        ProviderAccount.objects.get_or_create(
            name="DigitalOcean",
            defaults={
                "kind": "digitalocean",
                "api_base_url": "https://api.digitalocean.com",
                "token_env_var": "LABGPU_PROVIDER_TOKEN_DIGITALOCEAN",
                "is_active": False,
            },
        )
        types = {}
        for spec in INSTANCE_TYPES:
            spec = dict(spec)
            slug = spec.pop("slug")
            types[slug] = InstanceType.objects.get_or_create(
                slug=slug, defaults={**spec, "provider_account": emulator}
            )[0]
        pools = {}
        for spec in POOLS:
            spec = dict(spec)
            type_slug, slug = spec.pop("type"), spec.pop("slug")
            pool = NodePool.objects.get_or_create(
                slug=slug, defaults={**spec, "instance_type": types[type_slug]}
            )[0]
            # Older demo data baked the approval rule into the name; the SPA shows it as a badge.
            if pool.name == f"{spec['name']} (approval)":
                pool.name = spec["name"]
                pool.save(update_fields=["name", "updated_at"])
            pools[slug] = pool
        return pools

    def _quotas(self) -> None:
        month = month_start(now())
        for _ in range(3):
            for lab in Lab.objects.all():
                for instance_type in InstanceType.objects.all():
                    Quota.objects.get_or_create(
                        lab=lab,
                        instance_type=instance_type,
                        month=month,
                        defaults={
                            "gpu_hours": Decimal(2000 if instance_type.gpu_count > 1 else 400)
                        },
                    )
            month = next_month(month)

    def _bookings(self, users: dict[str, User], pools: dict[str, NodePool]) -> None:
        if Booking.objects.filter(purpose__startswith="[demo]").exists():
            return
        base = ceil_to_grid(now() + timedelta(days=1), 60).replace(hour=1)
        plans = [
            ("alice", "mi300x-tor1", 0, 4, "[demo] ViT-H fine-tuning on ImageNet-21k"),
            ("bob", "mi300x-tor1", 2, 3, "[demo] SDXL LoRA sweep"),
            ("erin", "mi350x-atl1", 24, 6, "[demo] Llama-3-8B continued pre-training"),
            ("alice", "mi350x-atl1", 48, 4, "[demo] Video diffusion baseline"),
            ("dave", "h200-nyc2", 5, 2, "[demo] vLLM throughput comparison"),
            ("mallory", "mi300x-tor1", 30, 2, "[demo] Tokenizer ablation"),
        ]
        # alice's first booking asks for JupyterLab: once it runs, the emulator's fixture agent
        # reports the notebook running and her booking page shows the tunnel and the URL.
        notebooks = {"[demo] ViT-H fine-tuning on ImageNet-21k"}
        for username, pool_slug, offset_h, length_h, purpose in plans:
            start = base + timedelta(hours=offset_h)
            booking_create(
                user=users[username],
                pool=pools[pool_slug],
                start=start,
                end=start + timedelta(hours=length_h),
                purpose=purpose,
                jupyter=purpose in notebooks,
            )

    def _weekly_series(self, users: dict[str, User], pools: dict[str, NodePool]) -> None:
        """erin's weekly evaluation run: a series (issue 25) of four Thursdays at 20:00 on her
        clock (Toronto), booked through the same rules as any booking; marked on the calendar."""
        if Booking.objects.filter(purpose=SERIES_DEMO_PURPOSE).exists():
            return
        erin = users["erin"]
        zone = ZoneInfo(erin.timezone)
        local = now().astimezone(zone)
        thursday = local.date() + timedelta(days=(3 - local.weekday()) % 7 or 7)
        start = datetime(thursday.year, thursday.month, thursday.day, 20, tzinfo=zone)
        try:
            series_create(
                user=erin,
                pool=pools["mi300x-tor1"].pk,
                start=start,
                end=start + timedelta(hours=3),
                recurrence=recurrence_of(frequency="weekly", timezone=erin.timezone, count=4),
                purpose=SERIES_DEMO_PURPOSE,
            )
        except ApplicationError as error:  # a demo database someone filled: say so, go on
            self.stderr.write(f"weekly series not booked: {error.message}")

    def _waiting_entry(self, users: dict[str, User], pools: dict[str, NodePool]) -> None:
        """erin waits (issue 25) for the one H200 node while dave's vLLM run holds it: her entry
        is first in line, offered the slot if dave cancels."""
        if WaitlistEntry.objects.filter(purpose=WAITLIST_DEMO_PURPOSE).exists():
            return
        held = Booking.objects.filter(purpose="[demo] vLLM throughput comparison").first()
        if held is None:
            return
        try:
            waitlist_join(
                user=users["erin"],
                pool=pools["h200-nyc2"],
                earliest_start=held.start,
                latest_end=held.end,
                duration_minutes=int((held.end - held.start).total_seconds() // 60),
                purpose=WAITLIST_DEMO_PURPOSE,
            )
        except ApplicationError as error:  # a demo database someone filled: say so, go on
            self.stderr.write(f"waitlist entry not made: {error.message}")

    def _extension_request(self, users: dict[str, User], pools: dict[str, NodePool]) -> None:
        """alice's approved booking with a longer end asked: the extension awaits bob."""
        pool_slug, days, hours, more, purpose = EXTENSION_DEMO
        if Booking.objects.filter(purpose=purpose).exists():
            return
        start = ceil_to_grid(now() + timedelta(days=days), 60).replace(hour=2)
        booking, _ = booking_create(
            user=users["alice"],
            pool=pools[pool_slug],
            start=start,
            end=start + timedelta(hours=hours),
            purpose=purpose,
        )
        booking = booking_approve(actor=users["bob"], booking=booking)
        booking_extend(
            actor=users["alice"], booking=booking, end=booking.end + timedelta(hours=more)
        )

    def _live_bookings(self) -> None:
        """The LIVE bookings, starting now, unless live ones are still running."""
        moment = now()
        if Booking.objects.filter(
            purpose__startswith=LIVE_PURPOSE,
            status__in=Booking.LIVE_STATUSES,
            end__gt=moment,
        ).exists():
            return
        # The pool whose node goes idle gets an idle policy (unless someone set one already).
        NodePool.objects.filter(slug=IDLE_DEMO_POOL, idle_reclaim_minutes__isnull=True).update(
            idle_reclaim_minutes=5, idle_grace_minutes=30
        )
        for username, pool_slug, hours, purpose in LIVE:
            pool = NodePool.objects.filter(slug=pool_slug).first()
            user = User.objects.filter(username=username).first()
            if pool is None or user is None:
                self.stderr.write(f"demo booking {purpose!r} skipped: no {username} or {pool_slug}")
                continue
            try:
                booking_create(
                    user=user,
                    pool=pool,
                    end=ceil_to_grid(moment + timedelta(hours=hours), pool.granularity_minutes),
                    purpose=purpose,
                )
            except ApplicationError as error:  # a demo database changed by hand: say, go on
                self.stderr.write(f"demo booking {purpose!r} not made: {error}")
                continue
            self.stdout.write(f"demo booking running now: {username}, {pool.name}: {purpose}")

    def _write_idle_file(self, path: str | None) -> None:
        """Name the idle demo booking's droplet tag for the emulator, whether this start made the
        booking or an earlier one did and it still runs; with none running, the file is empty."""
        if not path:
            return
        booking = (
            Booking.objects.filter(
                purpose=IDLE_DEMO_PURPOSE, status__in=Booking.LIVE_STATUSES, end__gt=now()
            )
            .order_by("-start")
            .first()
        )
        line = f"{booking_tag(booking.pk)}={IDLE_DEMO_HEARTBEATS}" if booking else ""
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(line)

    def _summary(self, users: dict[str, User], pools: dict[str, NodePool]) -> dict[str, Any]:
        people = []
        for username, _, role, lab_slug, _, _ in PEOPLE:
            _, raw = token_create(
                user=users[username], name="seed_demo", scopes=["read", "book", "admin"]
            )
            people.append(
                {
                    "username": username,
                    "password": DEMO_PASSWORD,
                    "role": role,
                    "lab": lab_slug,
                    "lab_id": Lab.objects.get(slug=lab_slug).pk if lab_slug else None,
                    "token": raw,
                }
            )
        return {
            "users": people,
            "pools": [
                {
                    "id": pool.pk,
                    "slug": pool.slug,
                    "name": pool.name,
                    "capacity": pool.capacity,
                    "requires_approval": pool.requires_approval,
                }
                for pool in pools.values()
            ],
        }
