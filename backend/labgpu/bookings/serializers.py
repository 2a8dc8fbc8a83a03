from decimal import Decimal
from typing import Any

from django.utils.translation import gettext as _
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from labgpu.accounts.models import Lab
from labgpu.accounts.selectors import labs_visible_to
from labgpu.accounts.serializers import LabSummarySerializer, UserSummarySerializer
from labgpu.api.fields import AwareDateTimeField, OwnPrimaryKeyRelatedField
from labgpu.api.serializers import CachedFieldsModelSerializer, CachedFieldsSerializer
from labgpu.bookings.models import Booking, BookingSeries, Notification
from labgpu.bookings.recurrence import MAX_OCCURRENCES, WEEKDAYS
from labgpu.core.reasons import reason_in_language
from labgpu.core.timeutils import iso


class BookingNodeSerializer(serializers.Serializer):
    """What the user needs to reach their node. The SSH command appears once it is ready."""

    id = serializers.IntegerField()
    attempt = serializers.IntegerField()
    status = serializers.CharField()
    public_ip = serializers.IPAddressField(allow_null=True)
    ssh_user = serializers.SerializerMethodField()
    ssh_command = serializers.SerializerMethodField()
    failure_reason = serializers.CharField()
    status_changed_at = serializers.DateTimeField(allow_null=True)
    # Longer in its status than expected: the page says so, with the provider's last error.
    stuck = serializers.BooleanField(source="is_stuck")
    last_error = serializers.CharField()
    last_error_at = serializers.DateTimeField(allow_null=True)
    notebook_state = serializers.CharField(
        help_text="JupyterLab as the node's agent reports it: starting, running, failed, or empty."
    )

    def get_ssh_user(self, node) -> str:  # type: ignore[no-untyped-def]
        return node.SSH_USER

    def get_ssh_command(self, node) -> str | None:  # type: ignore[no-untyped-def]
        return node.ssh_command


class BookingSerializer(CachedFieldsModelSerializer):
    lab = LabSummarySerializer(read_only=True)
    user = UserSummarySerializer(read_only=True)
    pool_name = serializers.CharField(source="pool.name", read_only=True)
    instance_type = serializers.IntegerField(source="pool.instance_type_id", read_only=True)
    gpu_hours = serializers.DecimalField(max_digits=12, decimal_places=2, read_only=True)
    estimated_cost = serializers.DecimalField(max_digits=12, decimal_places=2, read_only=True)
    decided_by = serializers.SlugRelatedField(slug_field="username", read_only=True)
    ended_by = serializers.SlugRelatedField(slug_field="username", read_only=True)
    actual_end = serializers.DateTimeField(
        read_only=True, help_text="The planned end, or when the booking was ended early."
    )
    node = BookingNodeSerializer(source="current_node", read_only=True, allow_null=True)

    class Meta:
        model = Booking
        fields = [
            "id",
            "pool",
            "pool_name",
            "instance_type",
            "lab",
            "user",
            "start",
            "end",
            "pending_end",
            "purpose",
            "cost_centre",
            "status",
            "status_changed_at",
            "on_demand",
            "jupyter",
            "series",
            "gpu_count",
            "price_per_hour",
            "gpu_hours",
            "estimated_cost",
            "consumed_gpu_hours",
            "decided_by",
            "decided_at",
            "decision_reason",
            "ended_by",
            "ended_at",
            "actual_end",
            "failure_reason",
            "end_reason",
            "actual_cost",
            "node",
            "created_at",
            "updated_at",
        ]
        read_only_fields = fields

    def to_representation(self, instance: Booking) -> dict[str, Any]:
        # The fields above document the answer (the schema); booking_representation writes it
        # (a page of 50 through DRF's per-field machinery cost more than everything else the
        # list does). tests/test_lean_reads.py holds the two to the same output.
        return booking_representation(instance)


def _decimal(value: Any, exponent: Decimal) -> str | None:
    """As DRF's DecimalField writes a value of that many decimal places (a string)."""
    if value is None:
        return None
    if not isinstance(value, Decimal):  # an attribute set in Python, not read back
        value = Decimal(str(value).strip())
    return f"{value.quantize(exponent):f}"


def _moment(value: Any) -> str | None:
    return value if value is None or isinstance(value, str) else iso(value)


CENTS, FOUR_PLACES = Decimal("0.01"), Decimal("0.0001")


def booking_representation(booking: Booking) -> dict[str, Any]:
    """BookingSerializer's answer for `booking`, as plain dicts (lab, user, pool, decided_by,
    ended_by loaded with it; its nodes prefetched where it can have one)."""
    lab, user, node = booking.lab, booking.user, booking.current_node
    decided_by, ended_by = booking.decided_by, booking.ended_by
    return {
        "id": booking.pk,
        "pool": booking.pool_id,
        "pool_name": booking.pool.name,
        "instance_type": booking.pool.instance_type_id,
        "lab": {"id": lab.pk, "name": lab.name, "slug": lab.slug},
        "user": {
            "id": user.pk,
            "username": user.username,
            "first_name": user.first_name,
            "last_name": user.last_name,
        },
        "start": iso(booking.start),
        "end": iso(booking.end),
        "pending_end": _moment(booking.pending_end),
        "purpose": booking.purpose,
        "cost_centre": booking.cost_centre_id,
        "status": booking.status,
        "status_changed_at": _moment(booking.status_changed_at),
        "on_demand": booking.on_demand,
        "jupyter": booking.jupyter,
        "series": booking.series_id,
        "gpu_count": booking.gpu_count,
        "price_per_hour": _decimal(booking.price_per_hour, FOUR_PLACES),
        "gpu_hours": _decimal(booking.gpu_hours, CENTS),
        "estimated_cost": _decimal(booking.estimated_cost, CENTS),
        "consumed_gpu_hours": _decimal(booking.consumed_gpu_hours, FOUR_PLACES),
        "decided_by": None if decided_by is None else decided_by.username,
        "decided_at": _moment(booking.decided_at),
        "decision_reason": booking.decision_reason,
        "ended_by": None if ended_by is None else ended_by.username,
        "ended_at": _moment(booking.ended_at),
        "actual_end": iso(booking.actual_end),
        "failure_reason": reason_in_language(booking.failure_reason),
        "end_reason": reason_in_language(booking.end_reason),
        "actual_cost": _decimal(booking.actual_cost, CENTS),
        "node": None
        if node is None
        else {
            "id": node.pk,
            "attempt": node.attempt,
            "status": node.status,
            "public_ip": None if node.public_ip is None else str(node.public_ip),
            "ssh_user": node.SSH_USER,
            "ssh_command": node.ssh_command,
            "failure_reason": reason_in_language(node.failure_reason),
            "status_changed_at": _moment(node.status_changed_at),
            "stuck": node.is_stuck,
            "last_error": node.last_error,
            "last_error_at": _moment(node.last_error_at),
            "notebook_state": node.notebook_state,
        },
        "created_at": iso(booking.created_at),
        "updated_at": iso(booking.updated_at),
    }


class BookingCreateSerializer(CachedFieldsSerializer):
    # A plain id: the booking service resolves it under the pool lock, together with whether the
    # lab may book it, instead of a separate lookup here.
    pool = serializers.IntegerField(min_value=1, max_value=2**63 - 1, help_text="Pool id")
    start = AwareDateTimeField(
        required=False, allow_null=True, help_text="Omit (or give now) for an on-demand booking."
    )
    end = AwareDateTimeField()
    purpose = serializers.CharField(max_length=500, required=False, allow_blank=True, default="")
    lab = OwnPrimaryKeyRelatedField(
        queryset=Lab.objects.all(),
        visible_to=labs_visible_to,
        required=False,
        allow_null=True,
        help_text="Needed when you are in several labs.",
    )
    jupyter = serializers.BooleanField(
        required=False, default=False, help_text="Start JupyterLab on the node (loopback only)."
    )
    cost_centre = serializers.IntegerField(
        min_value=1,
        max_value=2**63 - 1,
        required=False,
        allow_null=True,
        help_text="A cost centre of the booking's lab; omitted: the member's default.",
    )


class NotebookQuerySerializer(serializers.Serializer):
    local_port = serializers.IntegerField(
        required=False,
        default=8888,
        min_value=1024,
        max_value=65535,
        help_text="The port on your own machine the tunnel listens on.",
    )


class NotebookAccessSerializer(serializers.Serializer):
    """How the booking's owner reaches JupyterLab: an SSH tunnel to the node's loopback."""

    state = serializers.CharField(help_text="starting, running, failed, or empty (not yet).")
    ready = serializers.BooleanField(help_text="Whether the booking is ready (commands shown).")
    local_port = serializers.IntegerField()
    remote_port = serializers.IntegerField()
    ssh_command = serializers.CharField(allow_null=True)
    tunnel_command = serializers.CharField(allow_null=True)
    url = serializers.CharField(allow_null=True, help_text="Holds the secret token.")


class BookingExtendSerializer(CachedFieldsSerializer):
    end = AwareDateTimeField()


class BookingMoveSerializer(serializers.Serializer):
    start = AwareDateTimeField()
    end = AwareDateTimeField()


class ReasonSerializer(serializers.Serializer):
    """A cancel's reason (kept in the audit log)."""

    reason = serializers.CharField(max_length=1000, required=False, allow_blank=True, default="")


# An approval's or rejection's reason is stored in this column: a longer one is a field error.
DECISION_REASON_MAX = Booking._meta.get_field("decision_reason").max_length


class DecisionReasonSerializer(serializers.Serializer):
    reason = serializers.CharField(
        max_length=DECISION_REASON_MAX, required=False, allow_blank=True, default=""
    )


class BusyBlockSerializer(serializers.Serializer):
    """A live booking as a calendar sees it: other labs' bookings carry no identity (I-6)."""

    # The answer's shape, for the schema; bookings.selectors.busy_blocks builds it as plain dicts
    # (a month of a busy pool is a few hundred rows: a serializer per row cost more than the query).
    start = serializers.DateTimeField()
    end = serializers.DateTimeField()
    # The reserved period (start − provisioning lead, end + teardown grace) is what the pool
    # really holds: calendars draw it so that the time they show free is free (issue 14 bug 10).
    reserved_start = serializers.DateTimeField()
    reserved_end = serializers.DateTimeField()
    status = serializers.ChoiceField(choices=Booking.Status.choices)
    mine = serializers.BooleanField(read_only=True)
    booking = serializers.IntegerField(read_only=True, allow_null=True)
    lab = serializers.DictField(read_only=True, allow_null=True)
    series = serializers.IntegerField(
        read_only=True, allow_null=True, help_text="Its series, for your own labs' bookings."
    )


class AvailabilityQuerySerializer(CachedFieldsSerializer):
    # Every busy and availability request validates its range: fields copied from a template.
    start = AwareDateTimeField()
    end = AwareDateTimeField()
    duration_minutes = serializers.IntegerField(min_value=1, max_value=60 * 24 * 90, required=False)

    def validate(self, attrs: dict) -> dict:
        if attrs["end"] <= attrs["start"]:
            raise serializers.ValidationError(
                {
                    "end": [
                        serializers.ErrorDetail(
                            _("The end must be after the start."), code="end_before_start"
                        )
                    ]
                }
            )
        if (attrs["end"] - attrs["start"]).days > 92:
            raise serializers.ValidationError(
                {
                    "end": [
                        serializers.ErrorDetail(
                            _("Ask for at most %(days)s days at once.") % {"days": 92},
                            code="range_too_long",
                        )
                    ]
                }
            )
        return attrs


COMPACT_MAX_DAYS = 92  # as busy and availability: a quarter, whose answer stays bounded


class CompactBookingsQuerySerializer(CachedFieldsSerializer):
    """What `GET /bookings/compact/` takes: the list's filters of the same names, the pool and
    both ends of the window required (the answer is every booking in it, not a page)."""

    pool = serializers.IntegerField(min_value=1, max_value=2**63 - 1, help_text="Pool id")
    start_after = AwareDateTimeField(help_text="Bookings that end after this moment")
    end_before = AwareDateTimeField(help_text="Bookings that start before this moment")
    status = serializers.ListField(
        child=serializers.ChoiceField(choices=Booking.Status.choices),
        required=False,
        max_length=len(Booking.Status.choices),
        help_text="Only bookings in these statuses (repeat the parameter); default: every status.",
    )
    mine = serializers.BooleanField(required=False, default=False, help_text="Only my own bookings")

    def validate(self, attrs: dict) -> dict:
        if attrs["end_before"] <= attrs["start_after"]:
            raise serializers.ValidationError(
                {
                    "end_before": [
                        serializers.ErrorDetail(
                            _("The end must be after the start."), code="end_before_start"
                        )
                    ]
                }
            )
        if (attrs["end_before"] - attrs["start_after"]).days > COMPACT_MAX_DAYS:
            raise serializers.ValidationError(
                {
                    "end_before": [
                        serializers.ErrorDetail(
                            _("Ask for at most %(days)s days at once.")
                            % {"days": COMPACT_MAX_DAYS},
                            code="range_too_long",
                        )
                    ]
                }
            )
        return attrs


class CompactBookingSerializer(serializers.Serializer):
    """One booking of the compact list: the fields of the same names in BookingSerializer, with
    its lab and user as ids into the answer's `labs` and `users`."""

    # The answer's shape, for the schema; bookings.selectors.bookings_compact writes it.
    id = serializers.IntegerField()
    lab = serializers.IntegerField(help_text="The id of its lab in `labs`.")
    user = serializers.IntegerField(help_text="The id of its user in `users`.")
    start = serializers.DateTimeField()
    end = serializers.DateTimeField()
    pending_end = serializers.DateTimeField(allow_null=True)
    status = serializers.ChoiceField(choices=Booking.Status.choices)
    purpose = serializers.CharField()
    series = serializers.IntegerField(allow_null=True)
    gpu_count = serializers.IntegerField()
    on_demand = serializers.BooleanField()


class CompactBookingsSerializer(serializers.Serializer):
    """Every booking of the list's `pool` + `start_after` + `end_before` at once, compactly: each
    lab and user is written once (in `labs` and `users`) and each booking refers to them by id;
    the same bookings, in the same order and with the same values, as the paginated list's."""

    pool = serializers.IntegerField()
    count = serializers.IntegerField(help_text="How many bookings (all of them are here).")
    labs = LabSummarySerializer(many=True)
    users = UserSummarySerializer(many=True)
    bookings = CompactBookingSerializer(many=True)


class IntervalSerializer(serializers.Serializer):
    start = serializers.DateTimeField()
    end = serializers.DateTimeField()
    used = serializers.IntegerField()
    free = serializers.IntegerField()
    blackout = serializers.BooleanField()


class WindowSerializer(serializers.Serializer):
    start = serializers.DateTimeField()
    end = serializers.DateTimeField()


class AvailabilitySerializer(serializers.Serializer):
    pool = serializers.IntegerField()
    capacity = serializers.IntegerField()
    duration_minutes = serializers.IntegerField()
    intervals = IntervalSerializer(many=True)
    next_free = WindowSerializer(many=True)


class BlackoutClashSerializer(serializers.ModelSerializer):
    """A live booking a blackout overlaps, as the site admin deciding about it sees it."""

    user = serializers.CharField(source="user.username", read_only=True)
    lab = serializers.CharField(source="lab.name", read_only=True)

    class Meta:
        model = Booking
        fields = ["id", "user", "lab", "start", "end", "status"]
        read_only_fields = fields


class BlackoutCreatedSerializer(serializers.Serializer):
    """The new blackout and the live bookings it overlaps (their owners have been emailed)."""

    id = serializers.IntegerField()
    pool = serializers.IntegerField(source="pool_id")
    start = serializers.DateTimeField()
    end = serializers.DateTimeField()
    reason = serializers.CharField()
    clashes = BlackoutClashSerializer(many=True)


class NotificationSerializer(serializers.ModelSerializer):
    class Meta:
        model = Notification
        fields = ["id", "subject", "body", "booking", "read_at", "created_at"]
        read_only_fields = fields


class NotificationReadSerializer(serializers.Serializer):
    marked = serializers.IntegerField(help_text="How many unread notifications are now read.")


class QuotaImpactSerializer(serializers.Serializer):
    month = serializers.DateField()
    limit_gpu_hours = serializers.DecimalField(max_digits=12, decimal_places=2)
    used_before = serializers.DecimalField(max_digits=12, decimal_places=2)
    used_after = serializers.DecimalField(max_digits=12, decimal_places=2)
    exceeds = serializers.BooleanField()


class DecisionBlackoutSerializer(serializers.Serializer):
    start = serializers.DateTimeField()
    end = serializers.DateTimeField()
    reason = serializers.CharField()


class ApprovalQueueItemSerializer(serializers.Serializer):
    """A booking, or an approved booking's extension, waiting for a lab admin; with what the
    decision would change."""

    booking = BookingSerializer()
    is_extension = serializers.BooleanField()
    end_after = serializers.DateTimeField(help_text="The booking's end once approved.")
    quota = QuotaImpactSerializer(many=True)
    blackouts = DecisionBlackoutSerializer(many=True)
    capacity_free = serializers.BooleanField(
        help_text="Whether a node of the pool is still free over the whole period asked."
    )


class BulkDecisionSerializer(serializers.Serializer):
    ids = serializers.ListField(child=serializers.IntegerField(min_value=1), max_length=100)
    decision = serializers.ChoiceField(choices=["approve", "reject"])
    reason = serializers.CharField(
        max_length=DECISION_REASON_MAX, required=False, allow_blank=True, default=""
    )


class DecisionOutcomeSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    ok = serializers.BooleanField()
    code = serializers.CharField(help_text="Why it was not decided (empty when it was).")
    message = serializers.CharField()
    booking = BookingSerializer(allow_null=True)


class BulkDecisionResultSerializer(serializers.Serializer):
    results = DecisionOutcomeSerializer(many=True)


class FreeWindowsQuerySerializer(serializers.Serializer):
    after = AwareDateTimeField(required=False, help_text="Earliest start (default: now).")
    duration_minutes = serializers.IntegerField(
        min_value=1,
        max_value=60 * 24 * 90,
        required=False,
        help_text="Length of the windows (default: the pool's minimum duration).",
    )
    lab = serializers.IntegerField(
        required=False, help_text="The lab that would book (needed when you are in several)."
    )


class WindowRefusalSerializer(serializers.Serializer):
    code = serializers.CharField()
    message = serializers.CharField()


class FreeWindowSerializer(serializers.Serializer):
    start = serializers.DateTimeField()
    end = serializers.DateTimeField()
    refused = WindowRefusalSerializer(
        allow_null=True,
        help_text="Why a booking of this window would be refused by your own limits in the lab "
        "(hours per week, bookings at a time); null when it would not.",
    )


class SeriesCreateSerializer(BookingCreateSerializer):
    """A recurring booking: the first occurrence's [start, end) and how it repeats."""

    start = AwareDateTimeField(
        help_text="The first occurrence's start; its wall-clock time in "
        "`timezone` is every occurrence's."
    )
    frequency = serializers.ChoiceField(choices=BookingSeries.Frequency.choices)
    interval = serializers.IntegerField(
        min_value=1,
        max_value=52,
        required=False,
        default=1,
        help_text="Every N days, weeks or months.",
    )
    weekdays = serializers.ListField(
        child=serializers.ChoiceField(choices=WEEKDAYS),
        required=False,
        max_length=7,
        help_text="Weekly: the days (default: the first start's).",
    )
    month_day = serializers.IntegerField(
        min_value=1,
        max_value=31,
        required=False,
        allow_null=True,
        help_text="Monthly: the day of the month (default: the first start's); months without "
        "it are skipped.",
    )
    count = serializers.IntegerField(
        min_value=1,
        max_value=MAX_OCCURRENCES,
        required=False,
        allow_null=True,
        help_text=f"How many occurrences (at most {MAX_OCCURRENCES}); or give `until`.",
    )
    until = serializers.DateField(
        required=False, allow_null=True, help_text="The last local day an occurrence may start."
    )
    exceptions = serializers.ListField(
        child=serializers.DateField(),
        required=False,
        max_length=366,
        help_text="Local days to skip.",
    )
    timezone = serializers.CharField(
        max_length=64, required=False, help_text="Default: your profile's time zone."
    )
    all_or_nothing = serializers.BooleanField(
        required=False,
        default=False,
        help_text="Book nothing unless every occurrence can be booked.",
    )

    def validate(self, attrs: dict) -> dict:
        if not attrs.get("count") and not attrs.get("until"):
            raise serializers.ValidationError(
                {
                    "count": [
                        serializers.ErrorDetail(
                            _("Give count or until: how the series ends."), code="required"
                        )
                    ]
                }
            )
        if attrs.get("count") and attrs.get("until"):
            raise serializers.ValidationError(
                {
                    "until": [
                        serializers.ErrorDetail(_("Give count or until, not both."), code="invalid")
                    ]
                }
            )
        return attrs


class OccurrenceSerializer(serializers.Serializer):
    start = serializers.DateTimeField()
    end = serializers.DateTimeField()
    booking = serializers.IntegerField(allow_null=True)
    status = serializers.CharField(
        help_text="The booking's status, or `refused` (the rules said no: `code`, `message`)."
    )
    code = serializers.CharField(help_text="Why the rules refused it (empty when booked).")
    message = serializers.CharField()


class SeriesSerializer(serializers.ModelSerializer):
    lab = LabSummarySerializer(read_only=True)
    user = UserSummarySerializer(read_only=True)
    pool_name = serializers.CharField(source="pool.name", read_only=True)
    occurrences = serializers.SerializerMethodField()

    class Meta:
        model = BookingSeries
        fields = [
            "id",
            "pool",
            "pool_name",
            "lab",
            "user",
            "frequency",
            "interval",
            "weekdays",
            "month_day",
            "timezone",
            "first_start",
            "duration_minutes",
            "count",
            "until",
            "exceptions",
            "purpose",
            "all_or_nothing",
            "occurrences",
            "created_at",
        ]
        read_only_fields = fields

    @extend_schema_field(OccurrenceSerializer(many=True))
    def get_occurrences(self, series: BookingSeries) -> list[dict]:
        """Each occurrence, booked or refused (the view lists them: services.series)."""
        return self.context["occurrences"]


class SeriesCancelSerializer(serializers.Serializer):
    from_booking = serializers.IntegerField(
        required=False,
        allow_null=True,
        help_text="Cancel this occurrence and the later ones (default: all not yet started).",
    )
    reason = serializers.CharField(max_length=1000, required=False, allow_blank=True, default="")


class SeriesMoveSerializer(serializers.Serializer):
    from_booking = serializers.IntegerField(help_text="This occurrence and the later ones.")
    shift_minutes = serializers.IntegerField(
        min_value=-60 * 24 * 7,
        max_value=60 * 24 * 7,
        required=False,
        default=0,
        help_text="Move each start by this much on the series' wall clock.",
    )
    duration_minutes = serializers.IntegerField(
        min_value=1,
        max_value=60 * 24 * 90,
        required=False,
        allow_null=True,
        help_text="A new length for each.",
    )


class SeriesChangedSerializer(serializers.Serializer):
    occurrences = OccurrenceSerializer(many=True)


class SeriesDecisionSerializer(serializers.Serializer):
    approved = serializers.ListField(child=serializers.IntegerField())
    rejected = serializers.ListField(child=serializers.IntegerField())
    expired = serializers.ListField(child=serializers.IntegerField())
