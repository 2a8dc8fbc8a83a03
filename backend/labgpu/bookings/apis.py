import functools
import re
from collections.abc import Callable
from datetime import timedelta
from itertools import pairwise
from typing import Any

from django.conf import settings
from django.db.models import QuerySet
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404
from django.utils.translation import gettext as _
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.filters import OrderingFilter
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from labgpu.accounts.authentication import bearer_token, speak_language_of
from labgpu.accounts.models import Membership, User
from labgpu.api.exceptions import exception_handler
from labgpu.api.fields import AwareDateTimeField
from labgpu.api.parsers import BodyRefused, loads_bounded
from labgpu.api.permissions import SITE_ADMIN, token_may
from labgpu.api.throttling import PrincipalRateThrottle
from labgpu.bookings import services
from labgpu.bookings.blackouts import blackout_clashes, blackout_create
from labgpu.bookings.filters import BookingFilter
from labgpu.bookings.free_windows import member_free_windows
from labgpu.bookings.models import Booking, BookingSeries, Notification
from labgpu.bookings.notifications import notification_mark_read
from labgpu.bookings.selectors import (
    availability_intervals,
    awaiting_decision_of,
    bookings_compact,
    bookings_visible_to,
    busy_blocks,
    decision_context,
    next_free_windows,
    nodes_load,
    series_visible_to,
    with_has_node,
)
from labgpu.bookings.serializers import (
    ApprovalQueueItemSerializer,
    AvailabilityQuerySerializer,
    AvailabilitySerializer,
    BlackoutClashSerializer,
    BlackoutCreatedSerializer,
    BookingCreateSerializer,
    BookingExtendSerializer,
    BookingMoveSerializer,
    BookingSerializer,
    BulkDecisionResultSerializer,
    BulkDecisionSerializer,
    BusyBlockSerializer,
    CompactBookingsQuerySerializer,
    CompactBookingsSerializer,
    DecisionReasonSerializer,
    FreeWindowSerializer,
    FreeWindowsQuerySerializer,
    NotebookAccessSerializer,
    NotebookQuerySerializer,
    NotificationReadSerializer,
    NotificationSerializer,
    ReasonSerializer,
    SeriesCancelSerializer,
    SeriesChangedSerializer,
    SeriesCreateSerializer,
    SeriesDecisionSerializer,
    SeriesMoveSerializer,
    SeriesSerializer,
)
from labgpu.bookings.services import series as series_services
from labgpu.catalog.apis import BlackoutViewSet as CatalogBlackoutViewSet
from labgpu.catalog.models import NodePool
from labgpu.catalog.selectors import pool_visible_to, pools_visible_to
from labgpu.catalog.serializers import BlackoutSerializer
from labgpu.core.errors import ApplicationError, NotPermitted
from labgpu.core.timeutils import iso

BOOK_ACTIONS = {"create", "cancel", "extend", "move"}
# What a page of the bookings list reads: every column of the booking, and of the rows joined with
# it (bookings_visible_to) those that BookingSerializer writes.
LISTED_COLUMNS = (
    *(field.name for field in Booking._meta.concrete_fields),
    "lab__name", "lab__slug",
    "user__username", "user__first_name", "user__last_name",
    "pool__name", "pool__instance_type",
    "decided_by__username", "ended_by__username",
)  # fmt: skip


class BookingViewSet(
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.CreateModelMixin,
    viewsets.GenericViewSet,
):
    queryset = Booking.objects.none()
    serializer_class = BookingSerializer
    filterset_class = BookingFilter
    filter_backends = [*viewsets.GenericViewSet.filter_backends, OrderingFilter]
    ordering_fields = ["start", "created_at", "end"]

    def token_scope(self, request: Request) -> str | None:
        return self.token_scope_of(self.action)

    @staticmethod
    def token_scope_of(action: str | None) -> str | None:
        return "book" if action in BOOK_ACTIONS else None

    def get_queryset(self) -> QuerySet[Booking]:
        bookings = bookings_visible_to(self.request.user).order_by("start", "id")
        if self.action != "list":
            return bookings.prefetch_related("nodes")
        # `list` loads the nodes of its page itself, only of bookings that can have one; of the
        # joined rows it reads only what BookingSerializer writes (a third of the columns).
        return with_has_node(bookings.only(*LISTED_COLUMNS))

    def list(self, request: Request) -> Response:
        page = self.paginate_queryset(self.filter_queryset(self.get_queryset()))
        assert page is not None, "the bookings list is always paginated"
        nodes_load(page)
        return self.get_paginated_response(self.get_serializer(page, many=True).data)

    @extend_schema(
        parameters=[CompactBookingsQuerySerializer],
        responses=CompactBookingsSerializer,
        filters=False,
    )
    @action(detail=False, methods=["get"], pagination_class=None)
    def compact(self, request: Request) -> Response:
        """Every booking of one pool that overlaps [start_after, end_before) — a calendar's month,
        at most 92 days — at once: the list's bookings for the same filters, in its order, with
        the fields a calendar and a list show, each lab and user written once."""
        query = CompactBookingsQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        asked = query.validated_data
        return Response(
            bookings_compact(
                request.user,
                pool_id=asked["pool"],
                start_after=asked["start_after"],
                end_before=asked["end_before"],
                statuses=asked.get("status"),
                mine=asked["mine"],
            )
        )

    @extend_schema(
        request=BookingCreateSerializer,
        responses={201: BookingSerializer, 200: BookingSerializer},
        parameters=[
            OpenApiParameter(
                "Idempotency-Key",
                str,
                OpenApiParameter.HEADER,
                description="Retrying with the same key returns the original booking (200).",
            )
        ],
    )
    def create(self, request: Request) -> Response:
        serializer = BookingCreateSerializer(data=request.data, context={"request": request})
        serializer.is_valid(raise_exception=True)
        key = request.headers.get("Idempotency-Key", "").strip() or None
        if key and len(key) > 255:
            raise ApplicationError(
                _("Idempotency-Key is at most 255 characters."), code="invalid_idempotency_key"
            )
        data = serializer.validated_data
        booking, created = services.booking_create(
            user=request.user,
            pool=data["pool"],
            start=data.get("start"),
            end=data["end"],
            purpose=data.get("purpose", ""),
            lab=data.get("lab"),
            jupyter=data.get("jupyter", False),
            cost_centre=data.get("cost_centre"),
            idempotency_key=key,
            # Only a request with a key is ever compared with another.
            request_fingerprint=services.idempotency_fingerprint(
                {name: getattr(value, "pk", value) for name, value in data.items()}
            )
            if key
            else "",
        )
        headers = {"Location": f"/api/v1/bookings/{booking.pk}/"}
        if not created:
            headers["Idempotent-Replayed"] = "true"
        return Response(
            BookingSerializer(booking).data,
            headers=headers,
            status=status.HTTP_201_CREATED if created else status.HTTP_200_OK,
        )

    def _act(self, request: Request, body_class: type, service: Callable[..., Booking]) -> Response:
        """Find the booking first (outsiders get 404 whatever they send), then read the body."""
        booking = self.get_object()
        body = body_class(data=request.data)
        body.is_valid(raise_exception=True)
        booking = service(actor=request.user, booking=booking, **body.validated_data)
        return Response(BookingSerializer(booking).data)

    @extend_schema(request=ReasonSerializer, responses=BookingSerializer)
    @action(detail=True, methods=["post"])
    def cancel(self, request: Request, pk: str) -> Response:
        """Cancel before the start, or end early once it runs (the node is torn down)."""
        return self._act(request, ReasonSerializer, services.booking_cancel)

    @extend_schema(request=BookingExtendSerializer, responses=BookingSerializer)
    @action(detail=True, methods=["post"])
    def extend(self, request: Request, pk: str) -> Response:
        return self._act(request, BookingExtendSerializer, services.booking_extend)

    @extend_schema(request=BookingMoveSerializer, responses=BookingSerializer)
    @action(detail=True, methods=["post"])
    def move(self, request: Request, pk: str) -> Response:
        """Move a booking not yet started to a new [start, end) in its pool (every rule again)."""
        return self._act(request, BookingMoveSerializer, services.booking_move)

    @extend_schema(
        parameters=[NotebookQuerySerializer],
        responses=NotebookAccessSerializer,
        filters=False,
    )
    @action(detail=True, methods=["get"])
    def notebook(self, request: Request, pk: str) -> Response:
        """JupyterLab's SSH tunnel command and URL (with its secret token), for the booking's
        owner only (403 for labmates and lab admins); the commands once the booking is ready."""
        booking = self.get_object()
        query = NotebookQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        access = services.notebook_access(
            user=request.user, booking=booking, local_port=query.validated_data["local_port"]
        )
        response = Response(NotebookAccessSerializer(access).data)
        response["Cache-Control"] = "no-store"
        return response

    @extend_schema(request=DecisionReasonSerializer, responses=BookingSerializer)
    @action(detail=True, methods=["post"])
    def approve(self, request: Request, pk: str) -> Response:
        return self._act(request, DecisionReasonSerializer, services.booking_approve)

    @extend_schema(request=DecisionReasonSerializer, responses=BookingSerializer)
    @action(detail=True, methods=["post"])
    def reject(self, request: Request, pk: str) -> Response:
        return self._act(request, DecisionReasonSerializer, services.booking_reject)

    @extend_schema(responses=ApprovalQueueItemSerializer(many=True), filters=False)
    @action(detail=False, methods=["get"], url_path="approval-queue", pagination_class=None)
    def approval_queue(self, request: Request) -> Response:
        """Bookings and extension requests of the labs this admin decides for, soonest first,
        each with its quota impact, the blackouts over it and whether capacity is still free."""
        items = [
            {"booking": booking, **vars(decision_context(booking))}
            for booking in awaiting_decision_of(request.user)
        ]
        return Response(ApprovalQueueItemSerializer(items, many=True).data)

    @extend_schema(request=BulkDecisionSerializer, responses=BulkDecisionResultSerializer)
    @action(detail=False, methods=["post"])
    def decide(self, request: Request) -> Response:
        """Approve or reject several at once; each is decided (and audited) on its own, and
        each one that could not be is listed with its error code."""
        body = BulkDecisionSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        outcomes = services.bookings_decide(
            actor=request.user,
            ids=body.validated_data["ids"],
            approve=body.validated_data["decision"] == "approve",
            reason=body.validated_data["reason"],
        )
        results = [{**vars(o), "ok": o.booking is not None} for o in outcomes]
        return Response(BulkDecisionResultSerializer({"results": results}).data)


RANGE_PARAMETERS = [
    OpenApiParameter("start", str, required=True, description="ISO 8601 with offset"),
    OpenApiParameter("end", str, required=True, description="ISO 8601 with offset"),
]


class PoolCalendarViewSet(viewsets.GenericViewSet):
    """What a pool's calendar reads: `/pools/{id}/availability/` and `/pools/{id}/busy/`.

    Served here, beside the bookings they read, rather than by the catalog's pool viewset; the
    URLs and the filters a pool lookup takes are the catalog's.
    """

    queryset = NodePool.objects.none()
    filterset_fields = ["instance_type", "region", "requires_approval", "is_active"]

    def get_queryset(self) -> QuerySet[NodePool]:
        # Without the instance type pools_visible_to joins for the catalog: neither answer reads
        # it, and the lookup plans in a quarter of the time (EXPLAIN: ~1 ms -> ~0.2 ms, loaded).
        return pools_visible_to(self.request.user).select_related(None).order_by("name")

    def filter_queryset(self, queryset: QuerySet[NodePool]) -> QuerySet[NodePool]:
        # The catalog's pool filters still narrow the lookup when given; a calendar sends none,
        # and building the FilterSet and its form for nothing cost as much as the pool's query.
        if self.request.query_params.keys().isdisjoint(self.filterset_fields):
            return queryset
        return super().filter_queryset(queryset)

    def get_object(self) -> NodePool:
        # A calendar sends no pool filter: the pool as pools_visible_to would find it, in one
        # prepared statement (pool_visible_to) instead of two compiled ones; with a filter, the
        # queryset and its FilterSet as before.
        if not self.request.query_params.keys().isdisjoint(self.filterset_fields):
            return super().get_object()
        raw = self.kwargs["pk"]
        wellformed = raw.isascii() and raw.isdecimal() and len(raw) <= 19  # at most a bigint
        pool = pool_visible_to(self.request.user, int(raw)) if wellformed else None
        if pool is None:
            raise Http404
        self.check_object_permissions(self.request, pool)
        return pool

    def _range(self, request: Request) -> dict:
        query = AvailabilityQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        return query.validated_data

    @extend_schema(
        parameters=[
            *RANGE_PARAMETERS,
            OpenApiParameter(
                "duration_minutes",
                int,
                description="Length of the windows to suggest "
                "(default: the pool's minimum duration)",
            ),
        ],
        responses=AvailabilitySerializer,
    )
    @action(detail=True, methods=["get"])
    def availability(self, request: Request, pk: str) -> Response:
        """Free capacity per interval in [start, end), and the next free windows for a duration."""
        pool = self.get_object()
        asked = self._range(request)
        start, end = asked["start"], asked["end"]
        minutes = asked.get("duration_minutes") or pool.min_duration_minutes
        intervals = availability_intervals(pool, start, end)
        windows = next_free_windows(pool, duration=timedelta(minutes=minutes), after=start)
        # Each piece ends where the next begins: every moment is formatted once.
        moments = [iso(piece.start) for piece in intervals]
        moments.append(iso(end))
        # Plain dicts in AvailabilitySerializer's shape (it documents the answer): a busy
        # pool-month has a few hundred intervals, and a serializer per interval cost more than
        # computing them.
        return Response(
            {
                "pool": pool.pk,
                "capacity": pool.capacity,
                "duration_minutes": minutes,
                "intervals": [
                    {
                        "start": piece_start,
                        "end": piece_end,
                        "used": piece.used,
                        "free": piece.free,
                        "blackout": piece.blackout,
                    }
                    for piece, (piece_start, piece_end) in zip(
                        intervals, pairwise(moments), strict=True
                    )
                ],
                "next_free": [{"start": iso(s), "end": iso(e)} for s, e in windows],
            }
        )

    @extend_schema(parameters=RANGE_PARAMETERS, responses=BusyBlockSerializer(many=True))
    @action(detail=True, methods=["get"], pagination_class=None)
    def busy(self, request: Request, pk: str) -> Response:
        """Live bookings in [start, end); other labs' only as anonymous busy blocks (I-6)."""
        pool = self.get_object()
        asked = self._range(request)
        return Response(busy_blocks(request.user, pool, asked["start"], asked["end"]))


# Blackouts, where creating one over live bookings lists them and tells their owners: the
# bookings app owns that part (catalog may not import bookings).
class BlackoutViewSet(CatalogBlackoutViewSet):
    @extend_schema(request=BlackoutSerializer, responses={201: BlackoutCreatedSerializer})
    def create(self, request: Request, *args: object, **kwargs: object) -> Response:
        """Close a pool for maintenance. Live bookings it overlaps stay as they are (the admin
        decides about each); they are listed in `clashes` and their owners are emailed."""
        serializer = self.get_serializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        blackout, clashes = blackout_create(actor=request.user, **serializer.validated_data)
        blackout.clashes = clashes  # type: ignore[attr-defined]
        return Response(BlackoutCreatedSerializer(blackout).data, status=status.HTTP_201_CREATED)

    @extend_schema(responses=BlackoutClashSerializer(many=True))
    @action(detail=True, methods=["get"], pagination_class=None, permission_classes=SITE_ADMIN)
    def clashes(self, request: Request, pk: str) -> Response:
        """Live bookings the blackout overlaps (site admins: it names other labs' people)."""
        blackout = self.get_object()
        return Response(BlackoutClashSerializer(blackout_clashes(blackout), many=True).data)


class NotificationViewSet(mixins.ListModelMixin, viewsets.GenericViewSet):
    """What the signed-in person was sent (e-mailed) about their bookings, newest first; each
    person sees only their own. `?unread=true` lists the unread ones (its count is the badge)."""

    serializer_class = NotificationSerializer

    def get_queryset(self) -> QuerySet[Notification]:
        if getattr(self, "swagger_fake_view", False):  # the schema generator has no user
            return Notification.objects.none()
        mine = Notification.objects.filter(user=self.request.user)
        if self.request.query_params.get("unread") in ("true", "1"):
            mine = mine.filter(read_at__isnull=True)
        return mine

    @extend_schema(
        parameters=[OpenApiParameter("unread", bool, description="Only the unread ones")],
    )
    def list(self, request: Request, *args: object, **kwargs: object) -> Response:
        return super().list(request, *args, **kwargs)

    @extend_schema(request=None, responses=NotificationReadSerializer)
    @action(detail=True, methods=["post"])
    def read(self, request: Request, pk: str) -> Response:
        """Mark this notification read (someone else's is a 404)."""
        notification = self.get_object()
        marked = notification_mark_read(user=request.user, notification_id=notification.pk)
        return Response({"marked": marked})

    @extend_schema(request=None, responses=NotificationReadSerializer)
    @action(detail=False, methods=["post"], url_path="read-all")
    def read_all(self, request: Request) -> Response:
        """Mark every notification of the signed-in person read."""
        return Response({"marked": notification_mark_read(user=request.user)})


class PoolFreeWindowsView(APIView):
    """The pool's next free windows for a duration, each marked with the refusal your own limits
    in the lab (hours per week, bookings at a time) would give a booking of it."""

    @extend_schema(
        parameters=[FreeWindowsQuerySerializer], responses=FreeWindowSerializer(many=True)
    )
    def get(self, request: Request, pk: int) -> Response:
        pool = get_object_or_404(pools_visible_to(request.user), pk=pk)
        query = FreeWindowsQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        asked = query.validated_data
        membership = _booking_membership(request.user, asked.get("lab"))
        windows = member_free_windows(
            pool,
            user=request.user,
            membership=membership,
            duration=timedelta(minutes=asked.get("duration_minutes") or pool.min_duration_minutes),
            after=asked.get("after"),
        )
        return Response(
            [
                {
                    "start": iso(w.start),
                    "end": iso(w.end),
                    "refused": w.refused and {"code": w.refused.code, "message": w.refused.message},
                }
                for w in windows
            ]
        )


def _booking_membership(user: User, lab_id: int | None) -> Membership | None:
    """The membership a booking by `user` would use: of `lab_id`, else their only one; None for
    someone in no lab (a site admin), whom no member limit binds."""
    memberships = list(Membership.objects.filter(user=user).select_related("lab"))
    if lab_id is not None:
        for membership in memberships:
            if membership.lab_id == lab_id:
                return membership
        raise NotPermitted(_("You are not a member of this lab."), code="not_a_member", field="lab")
    if len(memberships) > 1:
        raise ApplicationError(
            _("You are in several labs: say which one books."), code="lab_required", field="lab"
        )
    return memberships[0] if memberships else None


class SeriesViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """Recurring series: one request books every occurrence (each through the booking rules)
    and answers with each one booked or refused; see services/series.py."""

    queryset = BookingSeries.objects.none()
    serializer_class = SeriesSerializer

    def token_scope(self, request: Request) -> str | None:
        return "book" if self.action in {"create", "cancel", "move"} else None

    def get_queryset(self) -> QuerySet[BookingSeries]:
        if getattr(self, "swagger_fake_view", False):
            return BookingSeries.objects.none()
        return series_visible_to(self.request.user).order_by("-created_at", "-id")

    @staticmethod
    def _data(series: BookingSeries, listed: list | None = None) -> dict:
        if listed is None:
            listed = series_services.series_occurrences(series)
        context = {"occurrences": [series_services.occurrence_payload(o) for o in listed]}
        return SeriesSerializer(series, context=context).data

    def _answer(self, series: BookingSeries) -> Response:
        return Response(self._data(series))

    def list(self, request: Request) -> Response:
        page = self.paginate_queryset(self.get_queryset())
        assert page is not None
        return self.get_paginated_response([self._data(series) for series in page])

    def retrieve(self, request: Request, pk: str) -> Response:
        return self._answer(self.get_object())

    @extend_schema(
        request=SeriesCreateSerializer,
        responses={201: SeriesSerializer, 200: SeriesSerializer},
        parameters=[
            OpenApiParameter(
                "Idempotency-Key",
                str,
                OpenApiParameter.HEADER,
                description="Retrying with the same key returns the original series (200).",
            )
        ],
    )
    def create(self, request: Request) -> Response:
        """Book a recurring series. 201 with every occurrence (booked, or refused with the rule's
        code and message); 409 `series_refused` (each occurrence listed in `extra.occurrences`)
        when nothing could be booked, or any occurrence could not with `all_or_nothing`."""
        body = SeriesCreateSerializer(data=request.data, context={"request": request})
        body.is_valid(raise_exception=True)
        key = request.headers.get("Idempotency-Key", "").strip() or None
        if key and len(key) > 255:
            raise ApplicationError(
                _("Idempotency-Key is at most 255 characters."), code="invalid_idempotency_key"
            )
        data = body.validated_data
        recurrence = series_services.recurrence_of(
            frequency=data["frequency"],
            timezone=data.get("timezone") or request.user.timezone or "UTC",
            interval=data.get("interval", 1),
            weekdays=data.get("weekdays"),
            month_day=data.get("month_day"),
            count=data.get("count"),
            until=data.get("until"),
            exceptions=data.get("exceptions"),
        )
        result = series_services.series_create(
            user=request.user,
            pool=data["pool"],
            start=data["start"],
            end=data["end"],
            recurrence=recurrence,
            purpose=data.get("purpose", ""),
            lab=data.get("lab"),
            jupyter=data.get("jupyter", False),
            all_or_nothing=data.get("all_or_nothing", False),
            cost_centre=data.get("cost_centre"),
            idempotency_key=key,
            request_fingerprint=services.idempotency_fingerprint(
                {"series": {name: getattr(v, "pk", v) for name, v in data.items()}}
            )
            if key
            else "",
        )
        series = result.series
        headers = {"Location": f"/api/v1/series/{series.pk}/"}
        if not result.created:
            headers["Idempotent-Replayed"] = "true"
        return Response(
            self._data(series, result.occurrences),
            headers=headers,
            status=status.HTTP_201_CREATED if result.created else status.HTTP_200_OK,
        )

    def _from_booking(self, series: BookingSeries, pk: int | None) -> Booking | None:
        if pk is None:
            return None
        booking = Booking.objects.filter(pk=pk, series=series).first()
        if booking is None:
            raise ApplicationError(
                _("That booking is not an occurrence of this series."),
                code="not_in_series",
                field="from_booking",
            )
        return booking

    @extend_schema(request=SeriesCancelSerializer, responses=SeriesSerializer)
    @action(detail=True, methods=["post"])
    def cancel(self, request: Request, pk: str) -> Response:
        """Cancel an occurrence and every later one (`from_booking`), or all not yet started."""
        series = self.get_object()
        body = SeriesCancelSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        series_services.series_cancel(
            actor=request.user,
            series=series,
            from_booking=self._from_booking(series, body.validated_data.get("from_booking")),
            reason=body.validated_data["reason"],
        )
        return self._answer(series)

    @extend_schema(request=SeriesMoveSerializer, responses=SeriesChangedSerializer)
    @action(detail=True, methods=["post"])
    def move(self, request: Request, pk: str) -> Response:
        """Move an occurrence and the later ones not yet started (shift on the series' wall
        clock, new length); each through every rule, a refused one keeps its times (listed)."""
        series = self.get_object()
        body = SeriesMoveSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        from_booking = self._from_booking(series, body.validated_data["from_booking"])
        assert from_booking is not None
        outcomes = series_services.series_move(
            actor=request.user,
            series=series,
            from_booking=from_booking,
            shift_minutes=body.validated_data["shift_minutes"],
            duration_minutes=body.validated_data.get("duration_minutes"),
        )
        return Response({"occurrences": [series_services.occurrence_payload(o) for o in outcomes]})

    def _decide(self, request: Request, approve: bool) -> Response:
        series = self.get_object()
        body = DecisionReasonSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        decision = series_services.series_decide(
            actor=request.user, series=series, approve=approve, reason=body.validated_data["reason"]
        )
        return Response(vars(decision))

    @extend_schema(request=DecisionReasonSerializer, responses=SeriesDecisionSerializer)
    @action(detail=True, methods=["post"])
    def approve(self, request: Request, pk: str) -> Response:
        """Approve every pending occurrence at once (a lab admin of the series' lab)."""
        return self._decide(request, approve=True)

    @extend_schema(request=DecisionReasonSerializer, responses=SeriesDecisionSerializer)
    @action(detail=True, methods=["post"])
    def reject(self, request: Request, pk: str) -> Response:
        """Reject every pending occurrence at once (say why)."""
        return self._decide(request, approve=False)


# The booking create's token lane: a script's `POST /api/v1/bookings/` (a `book` or `admin`
# token, a plain JSON body) goes straight to services.booking_create — the same rules, the same
# answer, bytes and headers — without DRF's request wrapping, content negotiation, parser and
# serializer (about a tenth of a create's Python CPU: docs/benchmarks.md, "Where a create's time
# goes"). Anything else (a session, a refused token, a field in another form, an error the
# serializer words) is answered by BookingViewSet as before; the lane never words an error of
# its own about the request.
_LANE_MAX_BODY = 16 * 1024  # a booking is ~200 bytes; bigger bodies take DRF's path
_MOMENT = AwareDateTimeField()
_MAX_ID = 2**63 - 1
_PURPOSE_MAX = BookingCreateSerializer._declared_fields["purpose"].max_length
_SURROGATE = re.compile("[\ud800-\udfff]")
# What DRF's finalize_response adds to the collection's answers (held against it by a test).
BOOKING_COLLECTION_ALLOW = "GET, POST, HEAD, OPTIONS"


def _plain_id(value: object) -> bool:
    return type(value) is int and 1 <= value <= _MAX_ID


def plain_create_ask(body: object) -> dict[str, Any] | None:
    """BookingCreateSerializer's validated_data for `body` when every field it sends is of the
    plain kind a script sends (ints, strings, booleans, nulls); None when the serializer must
    read it (a lab id to check, a number as a string, an error to word)."""
    if not isinstance(body, dict):
        return None
    pool, end, purpose = body.get("pool"), body.get("end"), body.get("purpose", "")
    if not _plain_id(pool) or not isinstance(end, str) or not isinstance(purpose, str):
        return None
    purpose = purpose.strip()  # CharField's trim_whitespace
    if len(purpose) > _PURPOSE_MAX or "\x00" in purpose or _SURROGATE.search(purpose):
        return None
    jupyter = body.get("jupyter", False)
    if type(jupyter) is not bool:
        return None
    ask: dict[str, Any] = {"pool": pool, "purpose": purpose, "jupyter": jupyter}
    try:
        if "start" in body:
            start = body["start"]
            if start is not None and not isinstance(start, str):
                return None
            ask["start"] = None if start is None else _MOMENT.to_internal_value(start)
        ask["end"] = _MOMENT.to_internal_value(end)
    except serializers.ValidationError:
        return None
    if "lab" in body:
        if body["lab"] is not None:  # whether the caller may see it: the serializer's check
            return None
        ask["lab"] = None
    if "cost_centre" in body:
        centre = body["cost_centre"]
        if centre is not None and not _plain_id(centre):
            return None
        ask["cost_centre"] = centre
    return ask


def _rendered(response: Response) -> Response:
    """`response` rendered as BookingViewSet's finalize_response renders it."""
    response.accepted_renderer = JSONRenderer()
    response.accepted_media_type = "application/json"
    response.renderer_context = {}
    response["Allow"] = BOOKING_COLLECTION_ALLOW
    return response.render()


def booking_create_by_token(request: HttpRequest) -> HttpResponse | None:
    """The token lane's answer to a create, or None to let BookingViewSet answer it."""
    if request.content_type != "application/json":
        return None
    accept = request.META.get("HTTP_ACCEPT", "*/*")
    if "*/*" not in accept and "application/json" not in accept:
        return None  # content negotiation (a 406) is DRF's
    length = request.META.get("CONTENT_LENGTH", "")
    limit = min(_LANE_MAX_BODY, settings.DATA_UPLOAD_MAX_MEMORY_SIZE or _LANE_MAX_BODY)
    if not length.isdigit() or int(length) > limit:
        return None  # reading a body over Django's limit raises: DRF words that refusal
    key = request.headers.get("Idempotency-Key", "").strip() or None
    if key and len(key) > 255:
        return None
    token = bearer_token(request)
    if token is None or not token_may(token, BookingViewSet.token_scope_of("create")):
        return None
    request.user = token.user
    speak_language_of(request, token.user)  # before any message is worded
    try:
        body = loads_bounded(request.body.decode(request.encoding or settings.DEFAULT_CHARSET))
    except (BodyRefused, UnicodeDecodeError, LookupError):
        return None
    data = plain_create_ask(body)
    if data is None:
        return None
    # After the body is known good, as DRF throttles before reading it; a refused request is
    # not counted, so BookingViewSet refuses it again with the 429 and its Retry-After.
    throttle = PrincipalRateThrottle()
    if throttle.rate is not None and not throttle.allow_key(
        throttle.key_for_token(token.secret_hash)
    ):
        return None
    try:
        booking, created = services.booking_create(
            user=token.user,
            pool=data["pool"],
            start=data.get("start"),
            end=data["end"],
            purpose=data["purpose"],
            lab=None,
            jupyter=data["jupyter"],
            cost_centre=data.get("cost_centre"),
            idempotency_key=key,
            request_fingerprint=services.idempotency_fingerprint(data) if key else "",
        )
    except Exception as error:
        refusal = exception_handler(error, {"request": request, "view": None})
        if refusal is None:
            raise
        return _rendered(refusal)
    headers = {"Location": f"/api/v1/bookings/{booking.pk}/"}
    if not created:
        headers["Idempotent-Replayed"] = "true"
    return _rendered(
        Response(
            BookingSerializer(booking).data,
            status=status.HTTP_201_CREATED if created else status.HTTP_200_OK,
            headers=headers,
        )
    )


def booking_collection_view() -> Callable[..., HttpResponse]:
    """/api/v1/bookings/: BookingViewSet's list and create, a token's plain create through the
    lane above. Carries the viewset view's attributes, so the schema and CSRF handling see the
    same view."""
    viewset_view = BookingViewSet.as_view({"get": "list", "post": "create"})

    def booking_collection(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if request.method == "POST":
            answer = booking_create_by_token(request)
            if answer is not None:
                return answer
        return viewset_view(request, *args, **kwargs)

    return functools.wraps(viewset_view)(booking_collection)
