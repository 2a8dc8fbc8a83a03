"""`labgpu`: book LabGPU nodes from a terminal. Run `labgpu --help`; exit codes in README.md."""

import argparse
import contextlib
import getpass
import json
import sys
import time
import uuid
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, NoReturn
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from labgpu_cli import __version__, config
from labgpu_cli.client import (
    EXIT_AUTH,
    EXIT_OK,
    EXIT_USAGE,
    EXIT_WAIT,
    ApiError,
    Client,
    CliError,
)
from labgpu_cli.times import TimeError, ceil_to_grid, parse, parse_duration, show

FAILED_STATUSES = {"failed", "cancelled", "rejected", "expired", "completed", "ending"}
STATUSES = [
    "pending",
    "scheduled",
    "provisioning",
    "ready",
    "ending",
    "completed",
    "cancelled",
    "rejected",
    "expired",
    "failed",
]


class UsageError(CliError):
    def __init__(self, message: str) -> None:
        super().__init__(message, EXIT_USAGE)


class Parser(argparse.ArgumentParser):
    """argparse exits 2 on bad usage; our 2 means "the API said no", so usage errors exit 1."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        raise UsageError(message)


class Context:
    """What a command needs: the API client, the output mode, the user's time zone."""

    def __init__(self, args: argparse.Namespace, out: Callable[[str], None]) -> None:
        self.args = args
        self.json = bool(getattr(args, "json", False))
        self.out = out
        self._client: Client | None = None
        self._me: dict[str, Any] | None = None

    @property
    def client(self) -> Client:
        if self._client is None:
            stored = config.load()
            if stored is None:
                raise CliError(
                    "not logged in: run `labgpu login` (or set LABGPU_URL and LABGPU_TOKEN)",
                    EXIT_AUTH,
                )
            self._client = Client(stored.url, stored.token)
        return self._client

    @property
    def me(self) -> dict[str, Any]:
        if self._me is None:
            self._me = self.client.get("/api/v1/me/")
        return self._me

    @property
    def zone(self) -> ZoneInfo:
        try:
            return ZoneInfo(self.me.get("timezone") or "UTC")
        except ZoneInfoNotFoundError:
            return ZoneInfo("UTC")

    def time(self, text: str, flag: str) -> datetime:
        try:
            return parse(text, self.zone)
        except TimeError as exc:
            raise UsageError(f"{flag}: {exc}") from None

    def show(self, value: Any) -> str:
        return show(value, self.zone)

    def emit_json(self, data: Any) -> None:
        self.out(json.dumps(data, indent=2, ensure_ascii=False))

    def close(self) -> None:
        if self._client is not None:
            self._client.close()


def table(rows: list[list[str]], headers: list[str]) -> str:
    cells = [headers, *rows]
    widths = [max(len(str(row[i])) for row in cells) for i in range(len(headers))]
    lines = ["  ".join(str(v).ljust(w) for v, w in zip(row, widths, strict=True)) for row in cells]
    return "\n".join(line.rstrip() for line in lines)


# --- resolving names -----------------------------------------------------------------------------


def resolve_pool(ctx: Context, ref: str) -> dict[str, Any]:
    """A pool by id, slug or name (case-insensitive)."""
    if ref.isdigit():
        return ctx.client.get(f"/api/v1/pools/{ref}/")
    wanted = ref.casefold()
    for pool in ctx.client.paginate("/api/v1/pools/"):
        if wanted in (pool["slug"].casefold(), pool["name"].casefold()):
            return pool
    raise ApiError(404, "not_found", f"No pool called {ref!r} (see `labgpu pools`).", {})


def resolve_lab(ctx: Context, ref: str | None) -> int | None:
    if ref is None:
        return None
    if ref.isdigit():
        return int(ref)
    for membership in ctx.me.get("memberships", []):
        lab = membership["lab"]
        if ref.casefold() in (lab["slug"].casefold(), lab["name"].casefold()):
            return int(lab["id"])
    raise UsageError(f"--lab: you are not in a lab called {ref!r}")


def booking_lines(ctx: Context, booking: dict[str, Any]) -> list[str]:
    node = booking.get("node") or {}
    lab = booking.get("lab") or {}
    user = booking.get("user") or {}
    lines = [
        f"Booking #{booking['id']}  {booking['status']}",
        f"  pool      {booking['pool_name']} (#{booking['pool']})",
        f"  lab       {lab.get('name', '-')}  user {user.get('username', '-')}",
        f"  start     {ctx.show(booking['start'])}",
        f"  end       {ctx.show(booking['end'])}",
        f"  purpose   {booking.get('purpose') or '-'}",
        f"  gpu-hours {booking['gpu_hours']}  est. cost {booking['estimated_cost']}",
    ]
    if node:
        lines.append(f"  node      {node['status']}  {node.get('public_ip') or ''}".rstrip())
        if node.get("ssh_command"):
            lines.append(f"  ssh       {node['ssh_command']}")
    if booking.get("failure_reason"):
        lines.append(f"  failure   {booking['failure_reason']}")
    return lines


# --- commands ------------------------------------------------------------------------------------


def cmd_login(ctx: Context) -> int:
    args = ctx.args
    url = args.url or input("LabGPU URL (e.g. https://labgpu.example.org): ").strip()
    token = args.token or getpass.getpass("API token (lgp_…): ").strip()
    if not url or not token:
        raise UsageError("both a URL and a token are needed")
    if "://" not in url:
        raise UsageError(f"--url: not a URL: {url!r}")
    client = Client(url, token)
    try:
        me = client.get("/api/v1/me/")
    finally:
        client.close()
    path = config.save(config.Config(url=url.rstrip("/"), token=token))
    if ctx.json:
        ctx.emit_json(me)
    else:
        ctx.out(f"Logged in to {url.rstrip('/')} as {me['username']} ({me['timezone']}).")
        ctx.out(f"Saved to {path}")
    return EXIT_OK


def cmd_pools(ctx: Context) -> int:
    pools = list(ctx.client.paginate("/api/v1/pools/"))
    if ctx.json:
        ctx.emit_json(pools)
        return EXIT_OK
    rows = []
    for pool in pools:
        kind = pool.get("instance_type_detail") or {}
        rows.append(
            [
                str(pool["id"]),
                pool["slug"],
                pool["name"],
                pool["region"],
                str(pool["capacity"]),
                f"{kind.get('gpu_count', '?')}× {kind.get('gpu_model', '?')}",
                str(kind.get("price_per_hour", "?")),
                "yes" if pool.get("requires_approval") else "no",
                "" if pool.get("is_active", True) else "closed",
            ]
        )
    headers = ["ID", "SLUG", "NAME", "REGION", "NODES", "GPUS", "$/H", "APPROVAL", ""]
    ctx.out(table(rows, headers))
    return EXIT_OK


def cmd_availability(ctx: Context) -> int:
    args = ctx.args
    pool = resolve_pool(ctx, args.pool)
    start = ctx.time(args.start, "--start")
    end = ctx.time(args.end, "--end")
    params: dict[str, Any] = {"start": start.isoformat(), "end": end.isoformat()}
    if args.duration:
        try:
            params["duration_minutes"] = int(parse_duration(args.duration).total_seconds() // 60)
        except TimeError as exc:
            raise UsageError(f"--duration: {exc}") from None
    body = ctx.client.get(f"/api/v1/pools/{pool['id']}/availability/", **params)
    if ctx.json:
        ctx.emit_json(body)
        return EXIT_OK
    ctx.out(f"{pool['name']}: {body['capacity']} node(s)")
    rows = [
        [
            ctx.show(i["start"]),
            ctx.show(i["end"]),
            str(i["used"]),
            str(i["free"]),
            "blackout" if i["blackout"] else "",
        ]
        for i in body["intervals"]
    ]
    ctx.out(table(rows, ["FROM", "TO", "USED", "FREE", ""]))
    if body.get("next_free"):
        ctx.out(f"Next free {body['duration_minutes']}-minute windows:")
        for window in body["next_free"]:
            ctx.out(f"  {ctx.show(window['start'])} → {ctx.show(window['end'])}")
    return EXIT_OK


def wait_ready(ctx: Context, booking: dict[str, Any]) -> int:
    """Poll until the node is ready (print its SSH command) or the booking ends up elsewhere."""
    args = ctx.args
    deadline = time.monotonic() + args.timeout
    last_status = None
    while True:
        status = booking["status"]
        node = booking.get("node") or {}
        if status == "ready" and node.get("ssh_command"):
            if booking.get("jupyter"):
                notebook = node.get("notebook_state")
                if notebook in ("running", "failed") or time.monotonic() >= deadline:
                    return print_notebook(ctx, booking)
            elif ctx.json:
                ctx.emit_json(booking)
                return EXIT_OK
            else:
                ctx.out(node["ssh_command"])
                return EXIT_OK
        if status in FAILED_STATUSES:
            if ctx.json:
                ctx.emit_json(booking)
            reason = booking.get("failure_reason") or node.get("failure_reason") or ""
            raise CliError(
                f"booking #{booking['id']} is {status}" + (f": {reason}" if reason else ""),
                EXIT_WAIT,
            )
        if status != last_status and not ctx.json:
            print(f"booking #{booking['id']}: {status}…", file=sys.stderr)
            last_status = status
        if time.monotonic() >= deadline:
            if ctx.json:
                ctx.emit_json(booking)
            raise CliError(
                f"booking #{booking['id']} is not ready after {args.timeout:g} s "
                f"(still {status}); `labgpu show {booking['id']}` to check later",
                EXIT_WAIT,
            )
        time.sleep(min(args.poll_interval, max(deadline - time.monotonic(), 0.0)))
        booking = ctx.client.get(f"/api/v1/bookings/{booking['id']}/")


def print_notebook(ctx: Context, booking: dict[str, Any]) -> int:
    """The node is ready and JupyterLab running (or given up on): print the SSH command, the
    tunnel and the notebook URL, which only the booking's owner can read from the API."""
    access = ctx.client.get(
        f"/api/v1/bookings/{booking['id']}/notebook/", local_port=ctx.args.local_port
    )
    if ctx.json:
        ctx.emit_json({**booking, "notebook": access})
    else:
        ctx.out(access["ssh_command"])
        ctx.out(access["tunnel_command"])
        ctx.out(access["url"])
        print("# run the tunnel (2nd line), then open the URL (3rd line)", file=sys.stderr)
    if access["state"] != "running":
        raise CliError(
            f"booking #{booking['id']} is ready but JupyterLab is "
            f"{access['state'] or 'not started'} on the node",
            EXIT_WAIT,
        )
    return EXIT_OK


def cmd_book(ctx: Context) -> int:
    args = ctx.args
    if args.model:
        return book_placement(ctx)
    if args.within or args.region:
        raise UsageError("--within and --region go with --model")
    if not args.pool:
        raise UsageError("say which pool (or --model for any pool of a GPU model)")
    if not args.start and not args.now:
        raise UsageError("one of --start or --now is needed")
    if args.end is None and args.hours is None:
        raise UsageError("one of --end or --hours is needed")
    pool = resolve_pool(ctx, args.pool)
    start = None if args.now else ctx.time(args.start, "--start")
    if args.end:
        end = ctx.time(args.end, "--end")
    else:
        base = start or datetime.now(UTC)
        end = base + timedelta(hours=args.hours)
        if start is None:
            # Booking now: the start is exempt from the grid, the end is not.
            end = ceil_to_grid(end, int(pool.get("granularity_minutes") or 1))
    body: dict[str, Any] = {"pool": pool["id"], "end": end.isoformat()}
    if start is not None:
        body["start"] = start.isoformat()
    if args.purpose:
        body["purpose"] = args.purpose
    if args.jupyter:
        body["jupyter"] = True
    lab = resolve_lab(ctx, args.lab)
    if lab is not None:
        body["lab"] = lab
    if args.repeat:
        return book_series(ctx, body)
    # One key for every retry of this booking: a retry after a lost response gets the first
    # booking back (200, Idempotent-Replayed) instead of booking twice.
    key = str(uuid.uuid4())
    response = ctx.client.request(
        "POST",
        "/api/v1/bookings/",
        json=body,
        headers={"Idempotency-Key": key},
        retry_unsafe=True,
    )
    booking = response.json()
    if args.wait_ready:
        if not ctx.json:
            ctx.out(f"Booked #{booking['id']} ({booking['status']}); waiting for the node…")
        return wait_ready(ctx, booking)
    if ctx.json:
        ctx.emit_json(booking)
    else:
        ctx.out("\n".join(booking_lines(ctx, booking)))
        if booking["status"] == "pending":
            ctx.out("Waiting for a lab admin's approval.")
    return EXIT_OK


def book_placement(ctx: Context) -> int:
    """`--model`: the earliest window of that GPU model across the pools your lab may book
    (POST /api/v1/bookings/place/), `--within A..B` (default: from now, as far as the pools book),
    `--region` repeatable (default: any). Nothing fits: exit 2 with the alternatives listed."""
    args = ctx.args
    if args.pool:
        raise UsageError("give a pool or --model, not both")
    if args.hours is None:
        raise UsageError("--model needs --hours")
    if args.now or args.end or args.repeat:
        raise UsageError("--model takes --hours and --within (or --start): no --now/--end/--repeat")
    body: dict[str, Any] = {"gpu_model": args.model, "hours": f"{args.hours:g}"}
    if args.within:
        first, sep, last = args.within.partition("..")
        if not sep or not first.strip() or not last.strip():
            raise UsageError("--within: give START..END, e.g. 2027-03-15T09:00..2027-03-19T18:00")
        body["after"] = ctx.time(first.strip(), "--within").isoformat()
        body["before"] = ctx.time(last.strip(), "--within").isoformat()
    elif args.start:
        body["after"] = ctx.time(args.start, "--start").isoformat()
    if args.region:
        body["regions"] = [r.strip().lower() for r in args.region]
    if args.purpose:
        body["purpose"] = args.purpose
    if args.jupyter:
        body["jupyter"] = True
    lab = resolve_lab(ctx, args.lab)
    if lab is not None:
        body["lab"] = lab
    response = ctx.client.request(
        "POST",
        "/api/v1/bookings/place/",
        json=body,
        headers={"Idempotency-Key": str(uuid.uuid4())},
        retry_unsafe=True,
    )
    booking = response.json()
    if args.wait_ready:
        if not ctx.json:
            ctx.out(f"Booked #{booking['id']} in {booking['pool_name']}; waiting for the node…")
        return wait_ready(ctx, booking)
    if ctx.json:
        ctx.emit_json(booking)
    else:
        ctx.out("\n".join(booking_lines(ctx, booking)))
        if booking["status"] == "pending":
            ctx.out("Waiting for a lab admin's approval.")
    return EXIT_OK


def book_series(ctx: Context, body: dict[str, Any]) -> int:
    """`--repeat`: one request books every occurrence (POST /api/v1/series/); each is listed,
    booked or refused with the server's reason. Exit 0 when any was booked."""
    args = ctx.args
    if "start" not in body:
        raise UsageError("--repeat needs --start (the first occurrence)")
    if (args.count is None) == (args.until is None):
        raise UsageError("--repeat needs --count N or --until DATE (one of them)")
    body = {**body, "frequency": args.repeat, "timezone": ctx.zone.key, "interval": args.every}
    if args.count is not None:
        body["count"] = args.count
    if args.until:
        body["until"] = args.until
    if args.on:
        body["weekdays"] = [day.strip().upper() for day in args.on.split(",") if day.strip()]
    if args.day is not None:
        body["month_day"] = args.day
    if args.skip:
        body["exceptions"] = [day.strip() for day in args.skip.split(",") if day.strip()]
    if args.all_or_nothing:
        body["all_or_nothing"] = True
    key = str(uuid.uuid4())  # a retry after a lost response gets the same series back
    series = ctx.client.request(
        "POST", "/api/v1/series/", json=body, headers={"Idempotency-Key": key}, retry_unsafe=True
    ).json()
    if ctx.json:
        ctx.emit_json(series)
        return EXIT_OK
    occurrences = series["occurrences"]
    booked = [o for o in occurrences if o["booking"]]
    ctx.out(
        f"Series #{series['id']}: {len(booked)} of {len(occurrences)} booked "
        f"({series['frequency']}, {series['timezone']})"
    )
    rows = [
        [
            str(o["booking"] or "-"),
            o["status"],
            ctx.show(o["start"]),
            ctx.show(o["end"]),
            o["message"] if not o["booking"] else "",
        ]
        for o in occurrences
    ]
    ctx.out(table(rows, ["ID", "STATUS", "START", "END", "REASON"]))
    if any(o["status"] == "pending" for o in booked):
        ctx.out("Waiting for a lab admin's approval (once, for the whole series).")
    return EXIT_OK


def cmd_list(ctx: Context) -> int:
    args = ctx.args
    params: dict[str, Any] = {"ordering": "start"}
    if args.status:
        params["status"] = args.status
    if args.pool:
        params["pool"] = resolve_pool(ctx, args.pool)["id"]
    if args.mine:
        params["mine"] = "true"
    bookings = list(ctx.client.paginate("/api/v1/bookings/", limit=args.limit, **params))
    if ctx.json:
        ctx.emit_json(bookings)
        return EXIT_OK
    rows = [
        [
            str(b["id"]),
            b["status"],
            b["pool_name"],
            (b.get("user") or {}).get("username", "-"),
            ctx.show(b["start"]),
            ctx.show(b["end"]),
            (b.get("purpose") or "")[:40],
        ]
        for b in bookings
    ]
    ctx.out(table(rows, ["ID", "STATUS", "POOL", "USER", "START", "END", "PURPOSE"]))
    return EXIT_OK


def cmd_show(ctx: Context) -> int:
    booking = ctx.client.get(f"/api/v1/bookings/{ctx.args.id}/")
    if ctx.json:
        ctx.emit_json(booking)
    else:
        ctx.out("\n".join(booking_lines(ctx, booking)))
    return EXIT_OK


def cmd_cancel(ctx: Context) -> int:
    booking = ctx.client.post(
        f"/api/v1/bookings/{ctx.args.id}/cancel/", {"reason": ctx.args.reason or ""}
    )
    if ctx.json:
        ctx.emit_json(booking)
    else:
        ctx.out(f"Booking #{booking['id']} is now {booking['status']}.")
    return EXIT_OK


def cmd_extend(ctx: Context) -> int:
    args = ctx.args
    if args.end:
        end = ctx.time(args.end, "--end")
    else:
        current = ctx.client.get(f"/api/v1/bookings/{args.id}/")
        end = datetime.fromisoformat(current["end"]) + timedelta(hours=args.hours)
    booking = ctx.client.post(f"/api/v1/bookings/{args.id}/extend/", {"end": end.isoformat()})
    if ctx.json:
        ctx.emit_json(booking)
    else:
        ctx.out(f"Booking #{booking['id']} now ends {ctx.show(booking['end'])}.")
    return EXIT_OK


def cmd_usage(ctx: Context) -> int:
    args = ctx.args
    params = {
        "start": ctx.time(args.start, "--start").isoformat(),
        "end": ctx.time(args.end, "--end").isoformat(),
        "group_by": args.group_by,
    }
    if args.csv:
        response = ctx.client.request(
            "GET",
            "/api/v1/usage/",
            params={**params, "format": "csv"},
            headers={"Accept": "text/csv"},
        )
        ctx.out(response.text.rstrip("\n"))
        return EXIT_OK
    rows = ctx.client.get("/api/v1/usage/", **params)
    if ctx.json:
        ctx.emit_json(rows)
        return EXIT_OK
    groups = [g.strip() for g in args.group_by.split(",") if g.strip()]
    label = {"lab": "lab_name", "user": "user_name", "pool": "pool_name"}
    label["instance_type"] = "instance_type_name"
    headers = [g.upper() for g in groups] + ["GPU-HOURS", "COST"]
    body = [
        [str(row.get(label.get(g, g), row.get(g, "-"))) for g in groups]
        + [str(row["gpu_hours"]), str(row["cost"])]
        for row in rows
    ]
    ctx.out(table(body, headers))
    return EXIT_OK


def cmd_chats(ctx: Context) -> int:
    channels = ctx.client.get("/api/v1/chat-channels/")
    if ctx.json:
        ctx.emit_json(channels)
        return EXIT_OK
    rows = [
        [
            str(c["id"]),
            c["name"],
            c["kind"],
            c.get("lab_name") or "me",
            c["hint"],
            c.get("last_delivery_status") or "-",
        ]
        for c in channels
    ]
    ctx.out(table(rows, ["ID", "NAME", "KIND", "OWNER", "ADDRESS", "LAST"]))
    return EXIT_OK


def cmd_chat_test(ctx: Context) -> int:
    delivery = ctx.client.post(f"/api/v1/chat-channels/{ctx.args.id}/test/", {})
    if ctx.json:
        ctx.emit_json(delivery)
    else:
        ctx.out(
            f"Test message queued (delivery {delivery['id']}); see `labgpu chat-log {ctx.args.id}`."
        )
    return EXIT_OK


def cmd_chat_log(ctx: Context) -> int:
    deliveries = ctx.client.get(f"/api/v1/chat-channels/{ctx.args.id}/deliveries/")
    if ctx.json:
        ctx.emit_json(deliveries)
        return EXIT_OK
    rows = [
        [
            ctx.show(d["created_at"]),
            d["event"],
            d["status"],
            str(d["http_status"] or "-"),
            str(d["attempts"]),
            (d["error"] or "")[:60],
        ]
        for d in deliveries
    ]
    ctx.out(table(rows, ["TIME", "EVENT", "STATUS", "HTTP", "TRIES", "ERROR"]))
    return EXIT_OK


def cmd_volumes(ctx: Context) -> int:
    volumes = ctx.client.get("/api/v1/volumes/")
    if ctx.json:
        ctx.emit_json(volumes)
        return EXIT_OK
    rows = [
        [
            str(v["id"]),
            v["name"],
            v.get("owner_lab_name") or v.get("owner_username") or "-",
            v["region"],
            f"{v['size_gb']} GB",
            f"{v['used_gb']} GB" if v.get("used_gb") is not None else "-",
            v["state"] + (" (in use)" if v.get("in_use") else ""),
            str(v["cost"]),
        ]
        for v in volumes
    ]
    ctx.out(table(rows, ["ID", "NAME", "OWNER", "REGION", "SIZE", "USED", "STATE", "COST"]))
    return EXIT_OK


def cmd_volume_delete(ctx: Context) -> int:
    """The data is gone for good: only with --yes, or "yes" typed at a terminal."""
    volume_id = ctx.args.id
    if not ctx.args.yes:
        if sys.stdin is None or not sys.stdin.isatty():
            raise UsageError(f"deleting volume {volume_id} destroys its data for good: add --yes")
        answer = input(f"Delete volume {volume_id} and all its data for good? Type yes: ")
        if answer.strip().lower() != "yes":
            raise UsageError("nothing deleted")
    ctx.client.request("DELETE", f"/api/v1/volumes/{volume_id}/")
    if ctx.json:
        ctx.emit_json({"id": volume_id, "state": "deleted"})
    else:
        ctx.out(f"Volume {volume_id} deleted.")
    return EXIT_OK


# --- the parser ----------------------------------------------------------------------------------


def build_parser() -> Parser:
    common = Parser(add_help=False)
    # SUPPRESS: `labgpu --json pools` and `labgpu pools --json` both work.
    common.add_argument(
        "--json", action="store_true", default=argparse.SUPPRESS, help="print the raw JSON"
    )
    parser = Parser(prog="labgpu", description="Book LabGPU nodes from a terminal.")
    parser.add_argument("--json", action="store_true", default=False, help="print the raw JSON")
    parser.add_argument("--version", action="version", version=f"labgpu {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=Parser)

    def command(name: str, handler: Callable[[Context], int], help_text: str) -> Parser:
        sub = commands.add_parser(name, parents=[common], help=help_text, description=help_text)
        sub.set_defaults(handler=handler)
        return sub

    login = command("login", cmd_login, "store the API URL and a token (checked first)")
    login.add_argument("--url", help="e.g. https://labgpu.example.org")
    login.add_argument("--token", help="a personal API token (lgp_…); asked for when omitted")

    command("pools", cmd_pools, "list the pools you can book")

    availability = command("availability", cmd_availability, "free capacity of a pool")
    availability.add_argument("pool", help="pool id, slug or name")
    availability.add_argument("--start", required=True, help="ISO 8601, or local time")
    availability.add_argument("--end", required=True, help="ISO 8601, or local time")
    availability.add_argument("--duration", help="suggest free windows this long (4h, 90m)")

    book = command("book", cmd_book, "book a node")
    book.add_argument("pool", nargs="?", help="pool id, slug or name (or --model)")
    when = book.add_mutually_exclusive_group()
    when.add_argument("--start", help="ISO 8601, or local time (with --model: not before)")
    when.add_argument("--now", action="store_true", help="start now (on demand)")
    until = book.add_mutually_exclusive_group()
    until.add_argument("--end", help="ISO 8601, or local time")
    until.add_argument("--hours", type=float, help="length in hours")
    book.add_argument("--purpose", default="", help="shown to your lab")
    book.add_argument("--lab", help="lab id or slug (when you are in several)")
    book.add_argument(
        "--jupyter",
        action="store_true",
        help="start JupyterLab on the node (with --wait-ready: print the tunnel and its URL)",
    )
    book.add_argument(
        "--local-port",
        type=int,
        default=8888,
        help="your machine's port for the notebook tunnel (8888)",
    )
    book.add_argument(
        "--wait-ready", action="store_true", help="wait for the node and print its SSH command"
    )
    book.add_argument(
        "--timeout", type=float, default=1800.0, help="seconds --wait-ready waits (1800)"
    )
    book.add_argument("--poll-interval", type=float, default=5.0, help=argparse.SUPPRESS)
    anywhere = book.add_argument_group("any pool of a GPU model, earliest (instead of a pool)")
    anywhere.add_argument("--model", help="GPU model, e.g. MI300X: the earliest window in any pool")
    anywhere.add_argument("--within", help="START..END: not before START, finished by END")
    anywhere.add_argument("--region", action="append", help="only this region (repeatable)")
    repeat = book.add_argument_group("repeat (a recurring series, in your time zone)")
    repeat.add_argument("--repeat", choices=["daily", "weekly", "monthly"])
    repeat.add_argument("--count", type=int, help="how many occurrences")
    repeat.add_argument("--until", help="the last local day, YYYY-MM-DD")
    repeat.add_argument("--every", type=int, default=1, help="every N days/weeks/months (1)")
    repeat.add_argument("--on", help="weekly: days, e.g. MO,TH (default: the start's)")
    repeat.add_argument("--day", type=int, help="monthly: day of the month (default: the start's)")
    repeat.add_argument("--skip", help="local days to skip, e.g. 2027-04-01,2027-04-08")
    repeat.add_argument(
        "--all-or-nothing", action="store_true", help="book none unless every one fits"
    )

    listing = command("list", cmd_list, "list bookings you can see")
    listing.add_argument("--status", action="append", choices=STATUSES, help="repeatable")
    listing.add_argument("--pool", help="pool id, slug or name")
    listing.add_argument("--mine", action="store_true", help="only your own bookings")
    listing.add_argument("--limit", type=int, default=500, help="at most this many (500)")

    show_cmd = command("show", cmd_show, "show one booking")
    show_cmd.add_argument("id", type=int)

    cancel = command("cancel", cmd_cancel, "cancel a booking, or end it early once it runs")
    cancel.add_argument("id", type=int)
    cancel.add_argument("--reason", default="")

    extend = command("extend", cmd_extend, "move a booking's end later")
    extend.add_argument("id", type=int)
    later = extend.add_mutually_exclusive_group(required=True)
    later.add_argument("--end", help="the new end: ISO 8601, or local time")
    later.add_argument("--hours", type=float, help="add this many hours to the end")

    usage = command("usage", cmd_usage, "GPU-hours and cost over a period")
    usage.add_argument("--start", required=True, help="ISO 8601, or local time/date")
    usage.add_argument("--end", required=True, help="ISO 8601, or local time/date")
    usage.add_argument("--group-by", default="lab,day", help="from lab,user,pool,day,instance_type")
    usage.add_argument("--csv", action="store_true", help="CSV as the API exports it")

    command("chats", cmd_chats, "your chat notification channels (and your labs')")
    chat_test = command("chat-test", cmd_chat_test, "send a test message to a chat channel")
    chat_test.add_argument("id", type=int, help="channel id (from `labgpu chats`)")
    chat_log = command("chat-log", cmd_chat_log, "a chat channel's last deliveries")
    chat_log.add_argument("id", type=int, help="channel id (from `labgpu chats`)")

    volumes = command("volumes", cmd_volumes, "your persistent volumes (and your labs')")
    volume_actions = volumes.add_subparsers(dest="volume_action", parser_class=Parser)
    delete = volume_actions.add_parser(
        "delete",
        parents=[common],
        help="delete a volume and its data (an admin-scoped token)",
        description="delete a volume and its data (an admin-scoped token)",
    )
    delete.set_defaults(handler=cmd_volume_delete)
    delete.add_argument("id", type=int, help="volume id (from `labgpu volumes`)")
    delete.add_argument("--yes", action="store_true", help="yes, destroy its data")
    return parser


def print_error(error: CliError, ctx: Context | None) -> None:
    if isinstance(error, ApiError):
        if ctx is not None and ctx.json and error.body is not None:
            print(json.dumps(error.body, indent=2, ensure_ascii=False), file=sys.stderr)
        print(f"error: {error.code}: {error.message}", file=sys.stderr)
        for field, messages in (error.extra.get("fields") or {}).items():
            print(f"  {field}: {' '.join(map(str, messages))}", file=sys.stderr)
        if error.code == "series_refused":
            zone = ZoneInfo("UTC")
            if ctx is not None:
                with contextlib.suppress(CliError):
                    zone = ctx.zone
            for o in error.extra.get("occurrences") or []:
                why = o.get("message") or "could be booked"
                print(f"  {show(o['start'], zone)}  {o['status']}: {why}", file=sys.stderr)
        if error.code == "no_placement" and error.extra.get("alternatives"):
            zone = ZoneInfo("UTC")
            if ctx is not None:
                with contextlib.suppress(CliError):
                    zone = ctx.zone
            print("Alternatives:", file=sys.stderr)
            for window in error.extra["alternatives"]:
                start, end = show(window["start"], zone), show(window["end"], zone)
                where = f"{window['pool_name']} ({window['region']})"
                print(f"  {where}: {start} → {end}", file=sys.stderr)
        if error.code == "pool_full" and error.extra.get("next_free"):
            zone = ZoneInfo("UTC")
            if ctx is not None:
                with contextlib.suppress(CliError):
                    zone = ctx.zone
            print("Next free windows:", file=sys.stderr)
            for window in error.extra["next_free"]:
                start, end = show(window["start"], zone), show(window["end"], zone)
                print(f"  {start} → {end}", file=sys.stderr)
    else:
        print(f"error: {error.message}", file=sys.stderr)


def main(argv: Sequence[str] | None = None, out: Callable[[str], None] = print) -> int:
    """Run one command; returns the exit code (README.md) instead of exiting."""
    parser = build_parser()
    ctx: Context | None = None
    try:
        try:
            args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
        except SystemExit as done:  # --help, --version
            return int(done.code or 0)
        ctx = Context(args, out)
        return int(args.handler(ctx))
    except CliError as error:
        print_error(error, ctx)
        return error.exit_code
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    finally:
        if ctx is not None:
            ctx.close()


def run() -> None:
    sys.exit(main())
