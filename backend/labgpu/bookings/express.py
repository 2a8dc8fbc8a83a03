"""The express lane for `POST /api/v1/bookings/` with an API token, on PostgreSQL.

Scripts that book with a token are the hot path (issue #2: hundreds of creates a second on two
cores). Through DRF a create costs ~20 ms of CPU: authentication, throttling, serializers and a
dozen ORM statements. This lane reads the request by hand, counts it against the token's throttle
bucket, and lets one SQL function (sql/book_express_v1.sql) authenticate, check every rule, reserve
the slot, lock the quota and write the booking, its audit entry and its idempotency key in a single
round trip. It takes only requests it is sure of: anything else (a session, unusual input, any
error, a fragmented pool, member limits, a quota alert, a replayed Idempotency-Key) returns None and
goes the normal way through BookingViewSet and `booking_create`, which alone word the errors.
Both ways answer with the same body; the tests run the booking rules through both.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from functools import wraps
from typing import Any

from django.core.exceptions import RequestDataTooBig
from django.db import DatabaseError, IntegrityError, connection, transaction
from django.http import HttpRequest, HttpResponse

from labgpu.accounts.services import TOKEN_PREFIX, hash_token
from labgpu.api.parsers import loads_bounded
from labgpu.api.throttling import PrincipalRateThrottle
from labgpu.bookings.models import Booking
from labgpu.bookings.services import (
    ON_DEMAND_TOLERANCE,
    START_BOOKING_TASK,
    idempotency_fingerprint,
)
from labgpu.core.outbox import publish_best_effort
from labgpu.core.timeutils import accepted_moment, now

logger = logging.getLogger(__name__)
BODY_FIELDS = frozenset({"pool", "start", "end", "purpose", "lab"})
MAX_ID = 2**63 - 1
MAX_PURPOSE = 500
MAX_IDEMPOTENCY_KEY = 255
MAX_CONTENT_TYPE = 256  # DRF refuses longer Content-Type headers (415)
BOOK = (
    "SELECT labgpu_book_express(%s::text, %s::bigint, %s::bigint, %s::timestamptz,"
    " %s::timestamptz, %s::boolean, %s::text, %s::timestamptz, %s::text, %s::text, %s::text,"
    " %s::text)"
)


@dataclass(frozen=True, slots=True)
class ExpressBooking:
    """A create request as BookingCreateSerializer would have validated it."""

    token_hash: str
    pool: int
    lab: int | None
    start: datetime | None
    end: datetime
    purpose: str
    idempotency_key: str | None
    fingerprint: str


def with_express_lane(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """Wrap the bookings list/create view; DRF's attributes stay visible to the schema generator."""

    @wraps(view)
    def bookings(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if request.method == "POST" and connection.vendor == "postgresql":
            response = book_express(request)
            if response is not None:
                return response
        return view(request, *args, **kwargs)

    return bookings


def book_express(request: HttpRequest) -> HttpResponse | None:
    """Book in one SQL round trip, or None when the request must take the normal way."""
    wanted = parse_express_booking(request)
    if wanted is None:
        return None
    throttle = PrincipalRateThrottle()
    if not throttle.allow_token(wanted.token_hash):
        request.express_throttle = throttle  # type: ignore[attr-defined]
        return None  # DRF answers the 429 with Retry-After, from this verdict
    moment = now()
    start, on_demand = wanted.start, False
    if start is None or abs(start - moment) < ON_DEMAND_TOLERANCE:
        start, on_demand = moment.replace(microsecond=0), True
    params = [
        wanted.token_hash,
        wanted.pool,
        wanted.lab,
        start,
        wanted.end,
        on_demand,
        wanted.purpose,
        moment,
        start.isoformat(),
        wanted.end.isoformat(),
        wanted.idempotency_key,
        wanted.fingerprint,
    ]
    try:
        row = _call(params)
    except IntegrityError:
        row = {"defer": "idempotency_race"}  # a parallel retry won: the service replays it
    except DatabaseError:
        # E.g. the function is missing from a restored database: DRF still books, only slower.
        logger.exception("Booking express lane failed; the request goes through DRF")
        row = {"defer": "error"}
    if row.get("defer") == "token":
        # Not a token DRF would let through: DRF counts only authenticated, permitted requests.
        throttle.forget()
        return None
    # Counted once: if the request goes on to DRF, its throttle reuses this verdict.
    request.express_throttle = throttle  # type: ignore[attr-defined]
    if "defer" in row:
        return None
    if on_demand and row["status"] == "scheduled":
        # Due now: start at once (the start sweep re-drives it if the broker is away).
        publish_best_effort(START_BOOKING_TASK, row["id"])
    body = _booking_body(row, wanted, start=start, on_demand=on_demand, moment=moment)
    # As DRF's JSONRenderer: compact UTF-8, with U+2028/2029 escaped for JavaScript's sake.
    text = json.dumps(body, ensure_ascii=False, separators=(",", ":"))
    text = text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
    response = HttpResponse(text.encode(), content_type="application/json", status=201)
    response["Location"] = f"/api/v1/bookings/{row['id']}/"
    response["Allow"] = "GET, POST, HEAD, OPTIONS"
    return response


def _call(params: list[Any]) -> dict[str, Any]:
    # Outside a transaction (production) the call is its own transaction: one round trip. Inside
    # one (tests, callers' atomic blocks) a savepoint keeps it usable if the call raises.
    if connection.in_atomic_block:
        with transaction.atomic():
            return _execute(params)
    return _execute(params)


def _execute(params: list[Any]) -> dict[str, Any]:
    with connection.cursor() as cursor:
        cursor.execute(BOOK, params)
        (result,) = cursor.fetchone()
    return json.loads(result) if isinstance(result, str) else result


def parse_express_booking(request: HttpRequest) -> ExpressBooking | None:
    """The request, if it is a bearer-token JSON create whose every field is unremarkable."""
    parts = request.headers.get("Authorization", "").split()
    if len(parts) != 2 or parts[0] != "Bearer" or not parts[1].startswith(TOKEN_PREFIX):
        return None
    # Only the plain case; DRF negotiates everything else (?format=, 406, 415).
    if request.META.get("QUERY_STRING") or request.headers.get("Accept", "*/*").strip() not in (
        "*/*",
        "application/json",
    ):
        return None
    if (
        request.content_type != "application/json"
        or len(request.META.get("CONTENT_TYPE", "")) > MAX_CONTENT_TYPE
        or not request.content_params.keys() <= {"charset"}
        or request.content_params.get("charset", "utf-8").lower() not in ("utf-8", "utf8")
    ):
        return None
    key = request.headers.get("Idempotency-Key", "").strip() or None
    if key is not None and len(key) > MAX_IDEMPOTENCY_KEY:
        return None
    try:
        # Bounded like DRF's parser (depth, finite numbers): DRF words the 400 for what fails.
        body = loads_bounded(request.body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RequestDataTooBig):
        return None
    if not isinstance(body, dict) or not body.keys() <= BODY_FIELDS:
        return None
    pool, lab = body.get("pool"), body.get("lab")
    if not _is_id(pool) or not (lab is None or _is_id(lab)):
        return None
    end = _aware(body.get("end"))
    start = None if body.get("start") is None else _aware(body["start"])
    purpose = _purpose(body.get("purpose", ""))
    if end is None or purpose is None or (start is None and body.get("start") is not None):
        return None
    # The fingerprint of the same fields the DRF path fingerprints (its validated data).
    validated: dict[str, Any] = {"pool": pool, "end": end, "purpose": purpose}
    if "start" in body:
        validated["start"] = start
    if "lab" in body:
        validated["lab"] = lab
    return ExpressBooking(
        token_hash=hash_token(parts[1]),
        pool=pool,
        lab=lab,
        start=start,
        end=end,
        purpose=purpose,
        idempotency_key=key,
        fingerprint=idempotency_fingerprint(validated),
    )


def _is_id(value: object) -> bool:
    return type(value) is int and 1 <= value <= MAX_ID


def _aware(value: object) -> datetime | None:
    """ISO 8601 with an offset, as AwareDateTimeField reads it, in UTC; None if in any doubt."""
    if not isinstance(value, str) or value != value.strip():
        return None
    try:
        parsed = datetime.fromisoformat(value)
        moment = parsed.astimezone(UTC) if parsed.utcoffset() is not None else None
    except (ValueError, OverflowError):
        return None
    return moment if moment is not None and accepted_moment(moment) else None


def _purpose(value: object) -> str | None:
    """As DRF's CharField: trimmed, at most 500 characters, no NUL or lone surrogates."""
    if not isinstance(value, str) or "\x00" in value:
        return None
    value = value.strip()
    if len(value) > MAX_PURPOSE:
        return None
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return None
    return value


def _iso(moment: datetime) -> str:
    """DRF's DateTimeField output: ISO 8601, UTC written as Z."""
    text = moment.isoformat()
    return text[:-6] + "Z" if text.endswith("+00:00") else text


def _booking_body(
    row: dict[str, Any],
    wanted: ExpressBooking,
    *,
    start: datetime,
    on_demand: bool,
    moment: datetime,
) -> dict[str, Any]:
    """BookingSerializer's output for the new booking, built without a query or a serializer."""
    booking = Booking(
        start=start,
        end=wanted.end,
        gpu_count=row["gpu_count"],
        price_per_hour=Decimal(row["price_per_hour"]),
    )
    return {
        "id": row["id"],
        "pool": wanted.pool,
        "pool_name": row["pool_name"],
        "instance_type": row["instance_type"],
        "lab": {key: row["lab"][key] for key in ("id", "name", "slug")},
        # In the serializer's key order (jsonb sorts keys), so the bytes match DRF's too.
        "user": {key: row["user"][key] for key in ("id", "username", "first_name", "last_name")},
        "start": _iso(start),
        "end": _iso(wanted.end),
        "purpose": wanted.purpose,
        "status": row["status"],
        "status_changed_at": _iso(moment),
        "on_demand": on_demand,
        "gpu_count": row["gpu_count"],
        "price_per_hour": row["price_per_hour"],
        "gpu_hours": f"{booking.gpu_hours:f}",
        "estimated_cost": f"{booking.estimated_cost:f}",
        "consumed_gpu_hours": None,
        "decided_by": None,
        "decided_at": None,
        "decision_reason": "",
        "ended_by": None,
        "ended_at": None,
        "failure_reason": "",
        "actual_cost": None,
        "node": None,
        "created_at": _iso(moment),
        "updated_at": _iso(moment),
    }
