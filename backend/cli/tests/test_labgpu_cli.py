"""The `labgpu` CLI against a live server (pytest-django's live_server), in-process through
`main(argv)` and once through the installed console script."""

import io
import json
import os
import shutil
import stat
import subprocess
import sys
import threading
import time
import uuid
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from zoneinfo import ZoneInfo

import httpx
import pytest
from django.db import connection
from labgpu_cli import times
from labgpu_cli.main import main

from labgpu.accounts.services import token_create
from labgpu.bookings.models import Booking
from labgpu.bookings.services import booking_create, booking_notebook_token
from labgpu.core.timeutils import now
from labgpu.provisioning.models import Node
from labgpu.usage.models import UsageRecord

live = pytest.mark.django_db(transaction=True)
SHANGHAI = ZoneInfo("Asia/Shanghai")


class Run:
    def __init__(self, code: int, out: str, err: str) -> None:
        self.code, self.out, self.err = code, out, err

    def json(self):
        return json.loads(self.out)


@pytest.fixture
def labgpu(tmp_path, monkeypatch, capsys):
    """Call the CLI in-process with a private config dir; returns (exit code, stdout, stderr)."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.delenv("LABGPU_URL", raising=False)
    monkeypatch.delenv("LABGPU_TOKEN", raising=False)
    monkeypatch.setattr("labgpu_cli.client.time.sleep", lambda s: None)  # retry backoff

    def call(*argv: str) -> Run:
        lines: list[str] = []
        capsys.readouterr()
        code = main(list(argv), out=lines.append)
        return Run(code, "\n".join(lines), capsys.readouterr().err)

    return call


@pytest.fixture
def alice_token(alice):
    return token_create(user=alice, name="cli", scopes=["book"])[1]


@pytest.fixture
def logged_in(labgpu, live_server, alice_token):
    result = labgpu("login", "--url", live_server.url, "--token", alice_token)
    assert result.code == 0, result.err
    return labgpu


@live
def test_login_checks_the_token_and_stores_it_private(labgpu, live_server, alice_token, tmp_path):
    result = labgpu("login", "--url", live_server.url, "--token", alice_token)
    assert result.code == 0, result.err
    assert "as alice (Asia/Shanghai)" in result.out
    path = tmp_path / "config" / "labgpu" / "config.toml"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert alice_token in path.read_text() and live_server.url in path.read_text()
    me = labgpu("--json", "login", "--url", live_server.url, "--token", alice_token).json()
    assert me["username"] == "alice"


@live
def test_login_with_a_bad_token_exits_3_and_stores_nothing(labgpu, live_server, alice, tmp_path):
    result = labgpu("login", "--url", live_server.url, "--token", "lgp_nope_nope")
    assert result.code == 3
    assert "authentication_failed" in result.err or "not_authenticated" in result.err
    assert not (tmp_path / "config" / "labgpu" / "config.toml").exists()


@live
def test_login_prompts_for_url_and_token(labgpu, live_server, alice_token, monkeypatch):
    monkeypatch.setattr("builtins.input", lambda prompt: live_server.url)
    monkeypatch.setattr("getpass.getpass", lambda prompt: alice_token)
    assert labgpu("login").code == 0


def test_without_login_commands_exit_3(labgpu):
    result = labgpu("pools")
    assert result.code == 3 and "labgpu login" in result.err


@live
def test_environment_overrides_the_stored_config(
    logged_in, alice, mallory, pool, quotas, tomorrow, monkeypatch
):
    booking_create(user=alice, pool=pool, start=tomorrow, end=tomorrow + timedelta(hours=1))
    assert len(logged_in("list", "--json").json()) == 1  # alice, from the config file
    _, mallory_token = token_create(user=mallory, name="env", scopes=["read"])
    monkeypatch.setenv("LABGPU_TOKEN", mallory_token)
    assert logged_in("list", "--json").json() == []  # mallory sees no vision lab bookings
    monkeypatch.setenv("LABGPU_TOKEN", "lgp_revoked_or_wrong")
    assert logged_in("pools").code == 3


def test_usage_errors_exit_1(labgpu):
    assert labgpu("book").code == 1
    assert labgpu("book", "pool", "--now").code == 1  # neither --end nor --hours
    assert labgpu("frobnicate").code == 1
    assert labgpu("--help").code == 0


@live
def test_pools_lists_what_alice_can_book(logged_in, pool):
    result = logged_in("pools")
    assert result.code == 0, result.err
    assert "mi300x-tor1" in result.out and "MI300X tor1" in result.out
    (only,) = logged_in("pools", "--json").json()
    assert only["id"] == pool.pk and only["slug"] == "mi300x-tor1"


@live
def test_book_in_local_time_then_show_list_extend_cancel(logged_in, pool, quotas, tomorrow):
    """Local times are alice's zone (Asia/Shanghai, +08:00); output is in that zone too."""
    local = tomorrow.astimezone(SHANGHAI).replace(tzinfo=None)
    start_text = local.strftime("%Y-%m-%d %H:%M")
    result = logged_in(
        "book", "mi300x-tor1", "--start", start_text, "--hours", "2", "--purpose", "SDXL"
    )
    assert result.code == 0, result.err
    booking = Booking.objects.get()
    assert booking.start == tomorrow and booking.end == tomorrow + timedelta(hours=2)
    assert booking.purpose == "SDXL"
    assert f"{start_text}+08:00" in result.out

    shown = logged_in("show", str(booking.pk))
    assert shown.code == 0 and "scheduled" in shown.out and f"{start_text}+08:00" in shown.out
    assert logged_in("show", str(booking.pk), "--json").json()["id"] == booking.pk

    listed = logged_in("list", "--mine", "--status", "scheduled", "--pool", str(pool.pk))
    assert listed.code == 0 and str(booking.pk) in listed.out and "SDXL" in listed.out
    assert [b["id"] for b in logged_in("list", "--json", "--status", "cancelled").json()] == []

    extended = logged_in("extend", str(booking.pk), "--hours", "1")
    assert extended.code == 0, extended.err
    booking.refresh_from_db()
    assert booking.end == tomorrow + timedelta(hours=3)
    new_end = (tomorrow + timedelta(hours=4)).isoformat()  # with an offset (UTC) this time
    assert logged_in("extend", str(booking.pk), "--end", new_end).code == 0
    booking.refresh_from_db()
    assert booking.end == tomorrow + timedelta(hours=4)

    cancelled = logged_in("cancel", str(booking.pk), "--json")
    assert cancelled.code == 0 and cancelled.json()["status"] == "cancelled"
    again = logged_in("cancel", str(booking.pk))
    assert again.code == 2 and "invalid_status" in again.err


@live
def test_api_errors_exit_2_with_code_and_message(logged_in, pool, quotas, tomorrow):
    missing = logged_in("show", "999999")
    assert missing.code == 2 and "error: not_found:" in missing.err
    past = logged_in(
        "book", str(pool.pk), "--start", "2020-01-01T00:00:00Z", "--end", "2020-01-01T01:00Z"
    )
    assert past.code == 2 and "start_in_past" in past.err
    body = logged_in("show", "999999", "--json")
    assert '"code": "not_found"' in body.err


@live
def test_full_pool_exits_2_and_prints_the_next_free_windows(logged_in, bob, pool, quotas, tomorrow):
    for _ in range(pool.capacity):
        booking_create(user=bob, pool=pool, start=tomorrow, end=tomorrow + timedelta(hours=1))
    result = logged_in("book", "mi300x-tor1", "--start", tomorrow.isoformat(), "--hours", "1")
    assert result.code == 2
    assert "error: pool_full:" in result.err and "Next free windows:" in result.err
    assert "+08:00 →" in result.err  # in alice's zone
    assert Booking.objects.filter(user__username="alice").count() == 0


@live
def test_book_retries_a_lost_response_with_the_same_idempotency_key(
    logged_in, alice, pool, quotas, tomorrow, monkeypatch
):
    """The first POST reaches the server but its answer is lost; the retry must replay it."""
    sent: list[str] = []
    real = httpx.HTTPTransport.handle_request

    def flaky(self, request):
        response = real(self, request)
        if request.method == "POST" and request.url.path == "/api/v1/bookings/":
            sent.append(request.headers["Idempotency-Key"])
            if len(sent) == 1:
                response.read()
                raise httpx.ReadTimeout("lost", request=request)
        return response

    monkeypatch.setattr(httpx.HTTPTransport, "handle_request", flaky)
    result = logged_in("book", "mi300x-tor1", "--start", tomorrow.isoformat(), "--hours", "1")
    assert result.code == 0, result.err
    assert len(sent) == 2 and sent[0] == sent[1]
    assert uuid.UUID(sent[0]).version == 4
    assert alice.bookings.count() == 1


def _flip(alice, *, status: str, ready_node: bool, notebook: str = "") -> None:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        booking = Booking.objects.filter(user=alice).first()
        if booking:
            if ready_node:
                Node.objects.create(
                    booking=booking,
                    provider_account=booking.pool.instance_type.provider_account,
                    region=booking.pool.region,
                    size="gpu-mi300x1-192gb",
                    image="ubuntu",
                    status=Node.Status.READY,
                    public_ip="203.0.113.7",
                    provider_id="7",
                    passed_at=now(),
                    notebook_state=notebook,
                )
            if notebook:
                booking_notebook_token(booking=booking)  # as the node's bootstrap makes it
            Booking.objects.filter(pk=booking.pk).update(
                status=status, failure_reason="" if ready_node else "health check failed"
            )
            return
        time.sleep(0.05)


def _flip_when_booked(
    alice, *, status: str, ready_node: bool = True, notebook: str = ""
) -> threading.Thread:
    """Play the lifecycle's part: once the booking exists, mark it (and a node) ready."""

    def flip() -> None:
        try:
            _flip(alice, status=status, ready_node=ready_node, notebook=notebook)
        finally:
            connection.close()  # this thread's own connection: let the test database go

    thread = threading.Thread(target=flip, daemon=True)
    thread.start()
    return thread


@live
def test_wait_ready_prints_the_ssh_command(logged_in, alice, pool, quotas):
    flipper = _flip_when_booked(alice, status="ready")
    result = logged_in(
        "book",
        "mi300x-tor1",
        "--now",
        "--hours",
        "1",
        "--wait-ready",
        "--timeout",
        "30",
        "--poll-interval",
        "0.2",
    )
    flipper.join()
    assert result.code == 0, result.err
    assert result.out.splitlines()[-1] == "ssh root@203.0.113.7"
    booking = Booking.objects.get()
    assert booking.on_demand and booking.end - booking.start >= timedelta(hours=1)
    grid = timedelta(minutes=pool.granularity_minutes)
    midnight = booking.end.replace(hour=0, minute=0, second=0, microsecond=0)
    assert (booking.end - midnight) % grid == timedelta(0)  # the end is on the pool's grid


@live
def test_book_jupyter_wait_ready_prints_ssh_tunnel_and_notebook_url(logged_in, alice, pool, quotas):
    flipper = _flip_when_booked(alice, status="ready", notebook="running")
    result = logged_in(
        "book",
        "mi300x-tor1",
        "--now",
        "--hours",
        "1",
        "--jupyter",
        "--local-port",
        "9000",
        "--wait-ready",
        "--timeout",
        "30",
        "--poll-interval",
        "0.2",
    )
    flipper.join()
    assert result.code == 0, result.err
    booking = Booking.objects.get()
    token = booking_notebook_token(booking=booking)
    assert booking.jupyter
    assert result.out.splitlines()[-3:] == [
        "ssh root@203.0.113.7",
        "ssh -N -L 9000:127.0.0.1:8888 root@203.0.113.7",
        f"http://127.0.0.1:9000/lab?token={token}",
    ]


@live
def test_wait_ready_exits_5_when_provisioning_fails(logged_in, alice, pool, quotas):
    flipper = _flip_when_booked(alice, status="failed", ready_node=False)
    result = logged_in(
        "book",
        "mi300x-tor1",
        "--now",
        "--hours",
        "1",
        "--wait-ready",
        "--timeout",
        "30",
        "--poll-interval",
        "0.2",
    )
    flipper.join()
    assert result.code == 5
    assert "is failed: health check failed" in result.err


@live
def test_wait_ready_exits_5_on_timeout(logged_in, pool, quotas, tomorrow):
    result = logged_in(
        "book",
        "mi300x-tor1",
        "--start",
        tomorrow.isoformat(),
        "--hours",
        "1",
        "--wait-ready",
        "--timeout",
        "0.5",
        "--poll-interval",
        "0.1",
    )
    assert result.code == 5 and "not ready after 0.5 s (still scheduled)" in result.err


@live
def test_availability_shows_intervals_and_next_free_windows(logged_in, bob, pool, quotas, tomorrow):
    booking_create(user=bob, pool=pool, start=tomorrow, end=tomorrow + timedelta(hours=1))
    start = tomorrow.astimezone(SHANGHAI).strftime("%Y-%m-%d %H:%M")
    end = (tomorrow + timedelta(hours=6)).isoformat()
    result = logged_in(
        "availability", "mi300x-tor1", "--start", start, "--end", end, "--duration", "2h"
    )
    assert result.code == 0, result.err
    assert "FREE" in result.out and "Next free 120-minute windows:" in result.out
    body = logged_in("availability", str(pool.pk), "--start", start, "--end", end, "--json")
    assert {i["used"] for i in body.json()["intervals"]} == {0, 1}


@live
def test_usage_as_table_json_and_csv(logged_in, alice, vision_lab, pool):
    start = datetime(2026, 3, 2, 1, tzinfo=UTC)
    booking = Booking.objects.create(
        user=alice,
        lab=vision_lab,
        pool=pool,
        start=start,
        end=start + timedelta(hours=2),
        status="completed",
        slot=0,
        reserved_start=start,
        reserved_end=start + timedelta(hours=2),
        gpu_count=1,
        price_per_hour=Decimal("2.00"),
    )
    node = Node.objects.create(
        booking=booking,
        provider_account=pool.instance_type.provider_account,
        region="tor1",
        size="s",
        image="i",
        status=Node.Status.DESTROYED,
    )
    UsageRecord.objects.create(
        node=node,
        provider_account=node.provider_account,
        droplet_id="9001",
        booking=booking,
        lab=vision_lab,
        user=alice,
        pool=pool,
        instance_type=pool.instance_type,
        started_at=start,
        ended_at=start + timedelta(hours=2),
        seconds=7200,
        gpu_count=1,
        price_per_hour=Decimal("2.00"),
    )
    period = ("--start", "2026-03-01", "--end", "2026-04-01")
    table = logged_in("usage", *period)
    assert table.code == 0, table.err
    assert "Vision Lab" in table.out and "2.00" in table.out
    rows = logged_in("usage", *period, "--group-by", "pool", "--json").json()
    assert rows[0]["pool_name"] == "MI300X tor1" and rows[0]["gpu_hours"] == "2.00"
    csv = logged_in("usage", *period, "--csv")
    assert csv.code == 0 and csv.out.splitlines()[0].startswith("lab")


def test_local_times_follow_the_users_zone_across_dst():
    berlin = ZoneInfo("Europe/Berlin")
    assert times.parse("2027-10-30 12:00", berlin).utcoffset() == timedelta(hours=2)
    assert times.parse("2027-11-01 12:00", berlin).utcoffset() == timedelta(hours=1)
    assert times.parse("2027-10-31T02:30+01:00", berlin).astimezone(UTC).hour == 1
    with pytest.raises(times.TimeError, match="happens twice"):
        times.parse("2027-10-31 02:30", berlin)
    with pytest.raises(times.TimeError, match="does not exist"):
        times.parse("2027-03-28 02:30", berlin)
    moment = datetime(2027, 10, 31, 1, 30, tzinfo=UTC)
    assert times.show(moment.isoformat(), berlin) == "2027-10-31 02:30+01:00"
    assert times.parse_duration("90") == timedelta(minutes=90)
    assert times.parse_duration("1.5h") == timedelta(minutes=90)


@live
def test_installed_console_script_runs_against_the_server(live_server, alice_token, pool, tmp_path):
    script = shutil.which("labgpu", path=str(Path(sys.executable).parent)) or shutil.which("labgpu")
    assert script, "labgpu-cli is not installed: uv pip install -e backend/cli"
    env = {
        **os.environ,
        "LABGPU_URL": live_server.url,
        "LABGPU_TOKEN": alice_token,
        "XDG_CONFIG_HOME": str(tmp_path),
    }
    done = subprocess.run(
        [script, "pools", "--json"], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert [p["slug"] for p in json.loads(done.stdout)] == ["mi300x-tor1"]
    missing = subprocess.run(
        [script, "show", "424242"], env=env, capture_output=True, text=True, timeout=60
    )
    assert missing.returncode == 2 and "not_found" in missing.stderr


@live
def test_chats_lists_channels_sends_a_test_and_shows_the_log(labgpu, live_server, alice, settings):
    from labgpu.chat import services as chat_services

    settings.LABGPU_CHAT_ALLOW_LOOPBACK = True
    channel = chat_services.channel_create(
        actor=alice, kind="slack", name="team", url="http://127.0.0.1:9/services/a/b/SECRET"
    )
    admin_token = token_create(user=alice, name="cli-admin", scopes=["admin"])[1]
    assert labgpu("login", "--url", live_server.url, "--token", admin_token).code == 0
    listed = labgpu("chats")
    assert listed.code == 0, listed.err
    assert "team" in listed.out and "slack" in listed.out and "SECRET" not in listed.out
    queued = labgpu("chat-test", str(channel.pk))
    assert queued.code == 0, queued.err
    log = labgpu("chat-log", str(channel.pk), "--json").json()
    assert [(d["event"], d["status"]) for d in log] == [("test", "pending")]


@live
def test_volumes_lists_yours_and_delete_asks_for_yes(labgpu, live_server, alice, monkeypatch):
    from labgpu.catalog.tests.factories import ProviderAccountFactory
    from labgpu.provisioning.models import Volume

    account = ProviderAccountFactory()
    mine = Volume.objects.create(
        owner_user=alice,
        provider_account=account,
        region="tor1",
        name="labgpu-u1-tor1",
        size_gb=100,
        used_gb=Decimal("12.5"),
        state="available",
    )
    admin_token = token_create(user=alice, name="cli-admin", scopes=["admin"])[1]
    assert labgpu("login", "--url", live_server.url, "--token", admin_token).code == 0

    listed = labgpu("volumes")
    assert listed.code == 0, listed.err
    assert "labgpu-u1-tor1" in listed.out and "12.50 GB" in listed.out and "tor1" in listed.out
    assert [v["name"] for v in labgpu("volumes", "--json").json()] == ["labgpu-u1-tor1"]

    monkeypatch.setattr("sys.stdin", io.StringIO(""))  # a script: nobody to ask
    unconfirmed = labgpu("volumes", "delete", str(mine.pk))
    assert unconfirmed.code == 1 and "--yes" in unconfirmed.err

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.setattr("sys.stdin", Terminal(""))
    monkeypatch.setattr("builtins.input", lambda prompt: "no")
    declined = labgpu("volumes", "delete", str(mine.pk))
    assert declined.code == 1 and "nothing deleted" in declined.err
    assert Volume.objects.get(pk=mine.pk).state == "available"

    monkeypatch.setattr("builtins.input", lambda prompt: "yes")
    typed = labgpu("volumes", "delete", str(mine.pk), "--json")
    assert typed.code == 0, typed.err
    assert typed.json() == {"id": mine.pk, "state": "deleted"}
    assert Volume.objects.get(pk=mine.pk).state == "deleted"


@live
def test_volumes_delete_of_a_volume_in_use_exits_2_and_keeps_it(labgpu, live_server, alice):
    from labgpu.provisioning.models import Volume
    from labgpu.provisioning.tests.factories import NodeFactory

    node = NodeFactory(booking__user=alice)
    used = Volume.objects.create(
        owner_user=alice,
        provider_account=node.provider_account,
        region=node.region,
        name="labgpu-u1-tor1",
        size_gb=100,
        state="attached",
        attached_node=node,
    )
    admin_token = token_create(user=alice, name="cli-admin", scopes=["admin"])[1]
    assert labgpu("login", "--url", live_server.url, "--token", admin_token).code == 0

    refused = labgpu("volumes", "delete", str(used.pk), "--yes")

    assert refused.code == 2
    assert "volume_in_use" in refused.err
    assert Volume.objects.get(pk=used.pk).state == "attached"


@live
def test_book_repeat_weekly_count_books_a_series_and_lists_each_occurrence(
    logged_in, alice, mallory, pool, quotas, tomorrow
):
    """`labgpu book … --repeat weekly --count 4`: one series, each occurrence a booking in the
    table at the same local time; one the pool cannot hold is listed with the server's reason."""
    local = tomorrow.astimezone(SHANGHAI).replace(tzinfo=None)
    start_text = local.strftime("%Y-%m-%d %H:%M")
    full = tomorrow + timedelta(days=14)
    for _ in range(pool.capacity):
        booking_create(user=mallory, pool=pool, start=full, end=full + timedelta(hours=1))
    result = logged_in(
        "book", "mi300x-tor1", "--start", start_text, "--hours", "1",
        "--repeat", "weekly", "--count", "4",
    )  # fmt: skip
    assert result.code == 0, result.err
    mine = Booking.objects.filter(user=alice).order_by("start")
    assert [b.start for b in mine] == [tomorrow + timedelta(days=7 * i) for i in (0, 1, 3)]
    assert {b.series_id for b in mine} != {None} and len({b.series_id for b in mine}) == 1
    assert "3 of 4 booked" in result.out
    assert "refused" in result.out and "fully booked" in result.out
    assert f"{start_text}+08:00" in result.out

    nothing = logged_in(
        "book", "mi300x-tor1", "--start", full.isoformat(), "--hours", "1",
        "--repeat", "daily", "--count", "2", "--all-or-nothing",
    )  # fmt: skip
    assert nothing.code == 2 and "series_refused" in nothing.err
    assert "refused:" in nothing.err
    assert Booking.objects.filter(user=alice).count() == 3
    usage = logged_in(
        "book", "mi300x-tor1", "--start", start_text, "--hours", "1", "--repeat", "daily"
    )
    assert usage.code == 1 and "--count" in usage.err


@live
def test_book_model_within_books_the_earliest_pool_of_the_model_or_lists_alternatives(
    logged_in, alice, mallory, instance_type, pool, quotas, tomorrow
):
    """`labgpu book --model MI300X --hours 2 --within A..B --region atl1`: the earliest window of
    the model in the asked region, a row in the table; nothing fits: exit 2, alternatives listed."""
    from labgpu.catalog.tests.factories import NodePoolFactory

    atl1 = NodePoolFactory(
        instance_type=instance_type, region="atl1", name="MI300X atl1", slug="mi300x-atl1",
        capacity=1, max_days_ahead=60,
    )  # fmt: skip
    local = tomorrow.astimezone(SHANGHAI).replace(tzinfo=None)
    within = f"{local:%Y-%m-%d %H:%M}..{local + timedelta(hours=2):%Y-%m-%d %H:%M}"

    booked = logged_in(
        "book", "--model", "MI300X", "--hours", "2", "--within", within, "--region", "atl1"
    )
    assert booked.code == 0, booked.err
    (mine,) = Booking.objects.filter(user=alice)
    assert (mine.pool_id, mine.start) == (atl1.pk, tomorrow)
    assert mine.end == tomorrow + timedelta(hours=2)
    assert "MI300X atl1" in booked.out

    full = logged_in(
        "book", "--model", "MI300X", "--hours", "2", "--within", within, "--region", "atl1"
    )
    assert full.code == 2 and "no_placement" in full.err
    assert "Alternatives:" in full.err and "MI300X tor1 (tor1)" in full.err
    assert Booking.objects.filter(user=alice).count() == 1
    assert logged_in("book", "--model", "MI300X", "--within", within).code == 1  # no --hours
    assert logged_in("book", "mi300x-tor1", "--model", "MI300X", "--hours", "1").code == 1
