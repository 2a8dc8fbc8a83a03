"""A few weeks of past use for the demo, so the dashboard and the usage charts show real pictures.

Past bookings cannot go through `booking_create` (it refuses a start in the past), so they are
written as the lifecycle leaves them: a completed booking, its destroyed node, the node's usage
record and the health report its agent sent. The reports are the agent's own output, replayed from
its recorded fixture profiles (real nvidia-smi / amd-smi outputs through the real parsers) and
stored through `report_ingest`, the path a live report takes. One booking's first node failed its
checks and was replaced: its record is the provider's cost, not the lab's.
"""

import copy
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from django.db import transaction
from labgpu_agent.cli import assemble_report
from labgpu_agent.collect import load_fixture_profile
from labgpu_agent.smoke import SMOKE_NAMES

from labgpu.accounts.models import Membership, User
from labgpu.bookings.models import Booking
from labgpu.catalog.models import NodePool
from labgpu.core.timeutils import now
from labgpu.health.services import failed_checks_reason, report_ingest
from labgpu.provisioning.models import Node
from labgpu.quotas.models import QuotaRequest
from labgpu.quotas.services import quota_request_create
from labgpu.usage.models import UsageRecord
from labgpu.usage.services import usage_record_price

HISTORY_PURPOSE = "[demo history]"
DAYS = 21
# Pool slug -> (the agent fixture profile its nodes replay, who books it in turn).
HISTORY_POOLS: dict[str, tuple[str, list[str]]] = {
    "mi300x-tor1": ("healthy-mi300x", ["alice", "erin", "bob", "mallory"]),
    "mi350x-atl1": ("healthy-mi350x", ["erin", "alice"]),
    "h200-nyc2": ("healthy-h200", ["dave", "bob", "alice"]),
}
# The failed first node of one booking: an NVIDIA Xid error on an H200 (a recorded fixture).
FAILED_PROFILE = "nvidia-xid"
PURPOSES = [
    "ViT-H fine-tuning",
    "SDXL LoRA sweep",
    "Llama-3-8B eval harness",
    "Diffusion ablations",
    "Tokenizer study",
    "vLLM throughput runs",
]


def _reports() -> dict[str, dict[str, Any]]:
    """One validated agent report per fixture profile (built once; copies vary per node)."""
    names = {profile for profile, _ in HISTORY_POOLS.values()} | {FAILED_PROFILE}
    return {
        name: assemble_report(
            profile_name=None, fixture=load_fixture_profile(name), smoke_names=list(SMOKE_NAMES)
        )
        for name in names
    }


def _varied(report: dict[str, Any], *, collected_at: datetime, wobble: float) -> dict[str, Any]:
    """`report` collected at `collected_at`, its smoke values moved by `wobble` (e.g. 0.98): real
    nodes of one type never measure the same twice."""
    out = copy.deepcopy(report)
    out["collected_at"] = collected_at.isoformat(timespec="seconds").replace("+00:00", "Z")
    for result in out["smoke"]:
        if isinstance(result.get("value"), int | float):
            result["value"] = round(result["value"] * wobble, 3)
    return out


def _node(
    *, booking: Booking, attempt: int, start: datetime, end: datetime, failed: bool = False
) -> Node:
    instance_type = booking.pool.instance_type
    return Node.objects.create(
        booking=booking,
        attempt=attempt,
        provider_account=instance_type.provider_account,
        provider_id=f"demo-{booking.pk}-{attempt}",
        region=booking.pool.region,
        size=instance_type.provider_size,
        image=instance_type.image,
        status=Node.Status.DESTROYED,
        status_changed_at=end,
        provider_created_at=start,
        active_at=start + timedelta(minutes=2),
        passed_at=None if failed else start + timedelta(minutes=6),
        ready_at=None if failed else start + timedelta(minutes=6),
        failed_at=start + timedelta(minutes=6) if failed else None,
        failure_reason=(
            failed_checks_reason(
                [{"id": "xid.79", "message": "The kernel log has 1 Xid 79 event(s)."}]
            )
            if failed
            else ""
        ),
        destroy_requested_at=end,
        destroyed_at=end + timedelta(minutes=1),
    )


def _usage(*, node: Node, start: datetime, end: datetime, charged: bool) -> None:
    booking = node.booking
    record = UsageRecord.objects.create(
        node=node,
        provider_account=node.provider_account,
        droplet_id=node.provider_id,
        booking=booking,
        lab=booking.lab,
        user=booking.user,
        pool=booking.pool,
        instance_type=booking.pool.instance_type,
        started_at=start,
        ended_at=end,
        seconds=int((end - start).total_seconds()),
        gpu_count=booking.gpu_count,
        price_per_hour=booking.price_per_hour,
        charged_to_lab=charged,
    )
    usage_record_price(record)


def _booking(
    *, user: User, pool: NodePool, start: datetime, end: datetime, slot: int, purpose: str
) -> Booking:
    lab = Membership.objects.filter(user=user).select_related("lab").first()
    assert lab is not None, f"{user} belongs to no lab"
    gpu_count = pool.instance_type.gpu_count
    hours = Decimal((end - start).total_seconds()) / 3600
    return Booking.objects.create(
        lab=lab.lab,
        user=user,
        pool=pool,
        start=start,
        end=end,
        purpose=f"{HISTORY_PURPOSE} {purpose}",
        status=Booking.Status.COMPLETED,
        status_changed_at=end,
        slot=slot,
        reserved_start=start,
        reserved_end=end,
        gpu_count=gpu_count,
        price_per_hour=pool.instance_type.price_per_hour,
        consumed_gpu_hours=hours * gpu_count,
        ended_at=end,
        actual_cost=(hours * pool.instance_type.price_per_hour).quantize(Decimal("0.01")),
    )


@transaction.atomic
def seed_quota_request(*, users: dict[str, User], pools: dict[str, NodePool]) -> None:
    """A lab admin's pending request for more hours this month (site admins decide); once only."""
    if QuotaRequest.objects.filter(reason__startswith=HISTORY_PURPOSE).exists():
        return
    dave = users["dave"]
    quota_request_create(
        actor=dave,
        lab=Membership.objects.get(user=dave).lab,
        instance_type=pools["mi350x-atl1"].instance_type,
        month=now().date(),
        gpu_hours=Decimal(120),
        reason=f"{HISTORY_PURPOSE} Llama-3-8B pre-training needs two more weeks of MI350X.",
    )


@transaction.atomic
def seed_history(*, users: dict[str, User], pools: dict[str, NodePool]) -> None:
    """Completed bookings of the last `DAYS` days with usage and health reports; once only."""
    if Booking.objects.filter(purpose__startswith=HISTORY_PURPOSE).exists():
        return
    reports = _reports()
    today = now().replace(hour=0, minute=0, second=0, microsecond=0)
    failed_once = False
    for day in range(DAYS, 0, -1):
        for index, (slug, (profile, people)) in enumerate(HISTORY_POOLS.items()):
            if (day + index) % 5 == 0:
                continue  # a quiet day in this pool
            pool = pools[slug]
            # Spread over the (UTC) day: some start late, so a Shanghai or Toronto day splits them.
            start = today - timedelta(days=day) + timedelta(hours=(3 * day + 5 * index) % 14 + 1)
            end = start + timedelta(hours=3 + (day * 7 + index) % 6)
            user = users[people[day % len(people)]]
            purpose = PURPOSES[(day + index) % len(PURPOSES)]
            booking = _booking(user=user, pool=pool, start=start, end=end, slot=0, purpose=purpose)
            wobble = 0.95 + ((day * 13 + index * 7) % 10) / 100
            attempt = 1
            if slug == "h200-nyc2" and not failed_once and day <= DAYS - 3:
                # The first node failed its checks, was destroyed and replaced by a healthy one.
                failed_once = True
                bad = _node(
                    booking=booking,
                    attempt=1,
                    start=start,
                    end=start + timedelta(minutes=8),
                    failed=True,
                )
                report_ingest(
                    node=bad,
                    payload=_varied(
                        reports[FAILED_PROFILE],
                        collected_at=start + timedelta(minutes=6),
                        wobble=1.0,
                    ),
                )
                _usage(node=bad, start=start, end=start + timedelta(minutes=8), charged=False)
                attempt = 2
                start = start + timedelta(minutes=8)  # the replacement's droplet starts then
            node = _node(booking=booking, attempt=attempt, start=start, end=end)
            report_ingest(
                node=node,
                payload=_varied(
                    reports[profile], collected_at=start + timedelta(minutes=5), wobble=wobble
                ),
            )
            _usage(node=node, start=start, end=end, charged=True)
