import io
import json
import re
import sys
import time
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from labgpu.accounts.models import User
from labgpu.bookings.models import Booking
from labgpu.catalog.models import InstanceType, NodePool, ProviderAccount


@pytest.mark.django_db
def test_seed_demo_is_idempotent_and_prints_usable_credentials(client):
    call_command("seed_demo", stdout=io.StringIO())
    counts = (User.objects.count(), NodePool.objects.count(), Booking.objects.count())
    out = io.StringIO()
    call_command("seed_demo", "--json", stdout=out)
    assert (User.objects.count(), NodePool.objects.count(), Booking.objects.count()) == counts

    data = json.loads(out.getvalue())
    roles = {user["username"]: user["role"] for user in data["users"]}
    assert roles["carol"] == "site_admin" and roles["bob"] == "lab_admin"
    assert {"vision", "language"} <= {user["lab"] for user in data["users"]}
    pools = {pool["slug"]: pool for pool in data["pools"]}
    assert any(pool["requires_approval"] for pool in pools.values())
    assert any(pool["capacity"] == 1 for pool in pools.values())
    assert {t.gpu_model for t in InstanceType.objects.all()} >= {
        "MI300X",
        "MI325X",
        "MI350X",
        "H100",
        "H200",
    }
    assert InstanceType.objects.get(gpu_model="MI350X").gpu_arch == "gfx950"
    assert Booking.objects.filter(status="pending").exists()

    alice = next(user for user in data["users"] if user["username"] == "alice")
    me = client.get("/api/v1/me/", HTTP_AUTHORIZATION=f"Bearer {alice['token']}")
    assert me.json()["username"] == "alice"
    assert client.login(username="alice", password=alice["password"])


@pytest.mark.django_db
def test_the_demo_emulator_account_follows_emulator_port(monkeypatch):
    # `EMULATOR_PORT=8933 make run`: the emulator listens on 8933, so the demo provider must too,
    # on a first seed and on every later start of an already seeded database.
    monkeypatch.setenv("EMULATOR_PORT", "8933")
    call_command("seed_demo", stdout=io.StringIO())
    assert (
        ProviderAccount.objects.get(name="Local emulator").api_base_url == "http://127.0.0.1:8933"
    )

    monkeypatch.setenv("EMULATOR_PORT", "8011")
    call_command("seed_demo", "--emulator-only", stdout=io.StringIO())
    assert (
        ProviderAccount.objects.get(name="Local emulator").api_base_url == "http://127.0.0.1:8011"
    )
    # DigitalOcean's account is left alone.
    assert (
        ProviderAccount.objects.get(name="DigitalOcean").api_base_url
        == "https://api.digitalocean.com"
    )

    monkeypatch.delenv("EMULATOR_PORT")
    call_command("seed_demo", "--emulator-only", stdout=io.StringIO())
    assert (
        ProviderAccount.objects.get(name="Local emulator").api_base_url == "http://127.0.0.1:8010"
    )


@pytest.mark.django_db
def test_a_nonsense_emulator_port_is_refused(monkeypatch):
    monkeypatch.setenv("EMULATOR_PORT", "80x")
    with pytest.raises(CommandError, match="EMULATOR_PORT"):
        call_command("seed_demo", "--emulator-only", stdout=io.StringIO())


@pytest.mark.django_db
def test_seed_demo_writes_weeks_of_history_once():
    from labgpu.health.models import HealthReport
    from labgpu.provisioning.models import Node
    from labgpu.quotas.models import QuotaRequest
    from labgpu.usage.models import UsageRecord

    call_command("seed_demo", stdout=io.StringIO())

    def counts() -> dict[str, int]:
        return {
            "completed": Booking.objects.filter(status="completed").count(),
            "pending": Booking.objects.filter(status="pending").count(),
            "nodes": Node.objects.count(),
            "usage": UsageRecord.objects.count(),
            "reports": HealthReport.objects.count(),
            "quota_requests": QuotaRequest.objects.filter(status="pending").count(),
        }

    first = counts()
    call_command("seed_demo", stdout=io.StringIO())
    assert counts() == first, "a second run duplicated rows"

    # Three weeks of completed bookings, each with its node's usage and health report.
    assert first["completed"] >= 40
    days = {b.start.date() for b in Booking.objects.filter(status="completed")}
    assert len(days) >= 20
    assert first["usage"] == first["nodes"] == first["reports"]
    # Reports of several instance types, as the agent's parsers shape them.
    assert len(HealthReport.objects.values("instance_type").distinct()) >= 3
    assert all(r.smoke and r.facts for r in HealthReport.objects.all()[:10])
    # One node failed its checks and was replaced; the provider's cost, not the lab's.
    failed = Node.objects.get(status="destroyed", failed_at__isnull=False)
    assert HealthReport.objects.get(node=failed).verdict == "fail"
    assert Node.objects.filter(booking=failed.booking, attempt=2, ready_at__isnull=False).exists()
    assert UsageRecord.objects.get(node=failed).charged_to_lab is False
    # Work waiting for an admin: bookings to approve and a quota request.
    assert first["pending"] >= 2
    assert first["quota_requests"] == 1


@pytest.mark.django_db
def test_seed_demo_pool_names_are_plain_and_approval_is_a_flag():
    """The approval rule is `requires_approval`, shown as a badge; never text in the pool's name."""
    call_command("seed_demo", stdout=io.StringIO())
    NodePool.objects.filter(slug="mi350x-atl1").update(name="MI350X ×1 · atl1 (approval)")
    call_command("seed_demo", stdout=io.StringIO())  # an older demo database is put right

    assert NodePool.objects.filter(requires_approval=True).exists()
    assert not NodePool.objects.filter(name__icontains="approval").exists()


@pytest.mark.django_db
def test_ready_reads_the_same_for_bookings_and_nodes_in_chinese():
    from django.utils import translation

    from labgpu.provisioning.models import Node

    with translation.override("zh-hans"):
        assert str(Booking.Status.READY.label) == str(Node.Status.READY.label) == "就绪"


@pytest.mark.django_db
def test_the_demo_shows_a_notebook_booking_of_alices():
    """Issue 15 item 6: alice's first demo booking asks for JupyterLab (the emulator's fixture
    agent then reports it running on her booking page)."""
    call_command("seed_demo", verbosity=0)
    notebooks = Booking.objects.filter(jupyter=True, purpose__startswith="[demo]")
    assert [b.user.username for b in notebooks] == ["alice"]


@pytest.mark.django_db
def test_make_run_starts_bookings_running_now_and_names_the_one_that_goes_idle(tmp_path):
    """Issue 15 item 6: on each `make run` start (`seed_demo --emulator-only --live`) demo bookings
    run now, their agents reporting varying use; --idle-file names the droplet tag of exactly one
    of them for the emulator, alice's, in a pool whose idle policy is on."""
    from labgpu.core.timeutils import now
    from labgpu.demo.management.commands.seed_demo import IDLE_DEMO_PURPOSE, LIVE_PURPOSE

    call_command("seed_demo", verbosity=0)
    assert not Booking.objects.filter(purpose__startswith=LIVE_PURPOSE).exists()
    # Without --live (e2e, benches) no pool has an idle policy: it is off by default.
    assert not NodePool.objects.filter(idle_reclaim_minutes__isnull=False).exists()
    idle_file = tmp_path / "var" / "demo-idle-after"
    live_start = ("seed_demo", "--emulator-only", "--live", "--idle-file", str(idle_file))
    call_command(*live_start, stdout=io.StringIO())

    live = list(
        Booking.objects.filter(purpose__startswith=LIVE_PURPOSE).select_related("pool", "user")
    )
    moment = now()
    assert len(live) >= 2
    assert all(b.status == "scheduled" and b.start <= moment < b.end for b in live), [
        (b.purpose, b.status, b.start, b.end) for b in live
    ]
    idle = Booking.objects.get(purpose=IDLE_DEMO_PURPOSE)
    assert idle_file.read_text() == f"labgpu-booking-{idle.pk}=4"
    assert idle.pool.idle_reclaim_minutes is not None and idle.pool.idle_grace_minutes
    # alice's: her demo chat channel (the chat sink) shows the idle warning.
    assert idle.user.username == "alice"

    # A second start while they run makes none and names the same one; once they are over, the
    # next start makes new ones and names the new one.
    call_command(*live_start, stdout=io.StringIO())
    assert Booking.objects.filter(purpose__startswith=LIVE_PURPOSE).count() == len(live)
    assert idle_file.read_text() == f"labgpu-booking-{idle.pk}=4"
    Booking.objects.filter(pk__in=[b.pk for b in live]).update(status="completed")
    call_command(*live_start, stdout=io.StringIO())
    assert Booking.objects.filter(
        purpose__startswith=LIVE_PURPOSE, status="scheduled"
    ).count() == len(live)
    new_idle = Booking.objects.get(purpose=IDLE_DEMO_PURPOSE, status="scheduled")
    assert idle_file.read_text() == f"labgpu-booking-{new_idle.pk}=4"
    # None running (alice's pool gone): nothing goes idle, and the emulator still starts.
    Booking.objects.filter(purpose__startswith=LIVE_PURPOSE).update(status="completed")
    NodePool.objects.filter(slug=idle.pool.slug).update(slug="h100-gone")
    call_command(*live_start, stdout=io.StringIO(), stderr=io.StringIO())
    assert idle_file.read_text() == ""


FAKE_AGENT = """
import json, os, time
out = os.path.join(os.environ["FAKE_AGENT_OUT"], os.environ["LABGPU_EMULATOR_DROPLET_ID"])
with open(out + ".json", "w") as fh:
    json.dump({"idle_after": os.environ.get("LABGPU_FIXTURE_IDLE_AFTER")}, fh)
time.sleep(60)
"""


def make_run_emulator_idle_config(idle_file: Path) -> tuple[dict[str, int], dict[str, str]]:
    """What `make run` hands the emulator about idle nodes: the Procfile's --idle-after flags and
    LABGPU_EMULATOR_IDLE_AFTER, which the Makefile reads from the file seed_demo --live wrote."""
    root = Path(__file__).resolve().parents[4]
    procfile = (root / "backend" / "Procfile").read_text()
    [emulator_line] = [line for line in procfile.splitlines() if line.startswith("emulator:")]
    flags = {tag: int(n) for tag, n in re.findall(r"--idle-after (\S+)=(\d+)", emulator_line)}
    makefile = (root / "Makefile").read_text()
    [written] = re.findall(r"seed_demo --emulator-only --live --idle-file (\S+)", makefile)
    assert f"LABGPU_EMULATOR_IDLE_AFTER=$$(cat {written}" in makefile, "make run drops the file"
    return flags, {"LABGPU_EMULATOR_IDLE_AFTER": idle_file.read_text()}


@pytest.mark.django_db
def test_make_run_sends_only_the_idle_demo_bookings_node_idle_not_every_node_of_its_type(
    tmp_path,
):
    """Issue 15 item 6 through the emulator's HTTP API, wired as `make run` wires it: alice's
    forgotten notebook's droplet goes idle; another booking's droplet of the same instance type
    (created with the same type tag) keeps reporting use."""
    import httpx

    from emulator.testing import start_emulator
    from labgpu.bookings.services import booking_create
    from labgpu.demo.management.commands.seed_demo import IDLE_DEMO_PURPOSE
    from labgpu.providers.cloudinit import render_user_data
    from labgpu.provisioning.services.nodes import droplet_tags

    call_command("seed_demo", verbosity=0)
    idle_file = tmp_path / "demo-idle-after"
    call_command(
        "seed_demo",
        "--emulator-only",
        "--live",
        "--idle-file",
        str(idle_file),
        stdout=io.StringIO(),
    )
    idle = Booking.objects.select_related("pool__instance_type").get(purpose=IDLE_DEMO_PURPOSE)
    other, _ = booking_create(
        user=User.objects.get(username="bob"),
        pool=idle.pool,
        end=idle.end,
        purpose="bob's training run in the same pool",
    )
    assert droplet_tags(other)[-1] == droplet_tags(idle)[-1]  # the same instance type's tag

    flags, env = make_run_emulator_idle_config(idle_file)
    script = tmp_path / "fake_agent.py"
    script.write_text(FAKE_AGENT)
    out = tmp_path / "agent-out"
    out.mkdir()
    handle = start_emulator(
        tmp_path / "emu",
        boot_delay_s=0.1,
        agent_cmd=f"{sys.executable} {script}",
        env={**env, "FAKE_AGENT_OUT": str(out)},
        idle_after=flags,
    )
    try:
        ids = {}
        with httpx.Client(base_url=handle.url, headers={"Authorization": "Bearer t"}) as api:
            for booking in (idle, other):
                user_data = render_user_data(
                    api_url="http://127.0.0.1:8000", bootstrap_token=f"bt_booking{booking.pk}_12345"
                )
                body = {
                    "name": f"labgpu-node-{booking.pk}",
                    "region": booking.pool.region,
                    "size": booking.pool.instance_type.provider_size,
                    "image": booking.pool.instance_type.image,
                    "tags": [f"labgpu-node-{booking.pk}", *droplet_tags(booking)],
                    "user_data": user_data,
                }
                created = api.post("/v2/droplets", json=body)
                assert created.status_code == 202, created.text
                ids[booking.pk] = created.json()["droplet"]["id"]

        def reported(booking: Booking) -> dict | None:
            deadline = time.monotonic() + 10
            path = out / f"{ids[booking.pk]}.json"
            while time.monotonic() < deadline:
                if path.exists() and path.read_text():
                    return json.loads(path.read_text())
                time.sleep(0.05)
            return None

        assert reported(idle) == {"idle_after": "4"}
        assert reported(other) == {"idle_after": None}
    finally:
        handle.close()


@pytest.mark.django_db
def test_live_demo_bookings_never_stop_make_run_on_a_hand_changed_database():
    """A demo pool deleted or a person gone: `make run` says which booking it skipped, starts."""
    from labgpu.demo.management.commands.seed_demo import LIVE_PURPOSE

    call_command("seed_demo", verbosity=0)
    NodePool.objects.filter(slug="h100-tor1").update(is_active=False, slug="h100-gone")
    User.objects.filter(username="erin").update(username="erin-renamed")
    err = io.StringIO()
    call_command("seed_demo", "--emulator-only", "--live", stdout=io.StringIO(), stderr=err)
    made = Booking.objects.filter(purpose__startswith=LIVE_PURPOSE)
    assert [b.user.username for b in made] == ["dave"]
    assert "h100-tor1" in err.getvalue() and "erin" in err.getvalue()


@pytest.mark.django_db
def test_the_demo_has_a_volume_pool_with_alices_live_node_and_an_extension_awaiting_bob(
    tmp_path,
):
    """Issue 24 acceptance 4: a demo pool offers volumes and alice's live node is in it (her /data
    is mounted when it provisions); an extension of alice's approved booking waits for bob."""
    from labgpu.bookings.services.changes import may_decide
    from labgpu.demo.management.commands.seed_demo import IDLE_DEMO_PURPOSE

    call_command("seed_demo", verbosity=0)
    call_command("seed_demo", "--emulator-only", "--live", stdout=io.StringIO())
    call_command("seed_demo", verbosity=0)  # re-run: still one extension asked

    offering = NodePool.objects.exclude(volume_scope=NodePool.VolumeScope.NONE)
    live = Booking.objects.get(purpose=IDLE_DEMO_PURPOSE)
    assert live.pool in offering and live.user.username == "alice"

    asked = Booking.objects.filter(pending_end__isnull=False)
    assert asked.count() == 1
    extension = asked.get()
    assert extension.user.username == "alice"
    assert extension.status == Booking.Status.SCHEDULED and extension.pending_end > extension.end
    assert may_decide(User.objects.get(username="bob"), extension)


@pytest.mark.django_db
def test_the_demo_shows_a_weekly_series():
    """`make run`'s data holds erin's weekly series: four Thursdays at 20:00 on her clock."""
    from zoneinfo import ZoneInfo

    from labgpu.bookings.models import Booking, BookingSeries

    call_command("seed_demo", stdout=io.StringIO())
    call_command("seed_demo", stdout=io.StringIO())  # idempotent: still one series
    series = BookingSeries.objects.get(user__username="erin")
    rows = Booking.objects.filter(series=series).order_by("start")
    assert rows.count() == 4
    toronto = ZoneInfo("America/Toronto")
    assert {b.start.astimezone(toronto).strftime("%a %H:%M") for b in rows} == {"Thu 20:00"}


@pytest.mark.django_db
def test_the_demo_shows_a_waiting_entry():
    """`make run`'s data holds erin's entry on the waitlist of the H200 window dave's run fills,
    first in line and still waiting (the pool has one node)."""
    from labgpu.waitlist.models import WaitlistEntry
    from labgpu.waitlist.selectors import entry_position

    call_command("seed_demo", stdout=io.StringIO())
    call_command("seed_demo", stdout=io.StringIO())  # idempotent: still one entry
    (entry,) = WaitlistEntry.objects.filter(user__username="erin")
    held = Booking.objects.get(purpose="[demo] vLLM throughput comparison")
    assert entry.pool == held.pool and entry.pool.capacity == 1
    assert (entry.earliest_start, entry.latest_end) == (held.start, held.end)
    assert entry.status == WaitlistEntry.Status.WAITING and entry_position(entry) == 1
