"""No 500 from a long string (issue 22 item 9): every serializer that takes text allows no more
than the column it lands in holds. An approve/reject reason of 501–1000 characters passed the
serializer (1000) and broke the `decision_reason` column (500) with a database error.

The walk imports every app's serializers. A ModelSerializer's text fields are checked against
its model's columns; a plain serializer that is a request body (the schema's `…Request`
components) must say, in STORED or NOT_STORED below, where each text field goes, so a new one
cannot slip past unclassified."""

import importlib
import inspect
import pkgutil
from pathlib import Path

import pytest
import yaml
from rest_framework import serializers

import labgpu
from conftest import client_for
from labgpu.accounts.models import Lab, User
from labgpu.bookings.models import Booking, BookingSeries
from labgpu.bookings.tests.factories import BookingFactory
from labgpu.budgets.models import Budget, CostCentre
from labgpu.chat.models import ChatChannel
from labgpu.invitations.models import Invitation
from labgpu.pricing.models import DisplayCurrency
from labgpu.provisioning.models import Volume
from labgpu.quotas.models import QuotaRequest
from labgpu.waitlist.models import WaitlistEntry

pytestmark = pytest.mark.security

SCHEMA = Path(__file__).resolve().parents[3] / "openapi.yaml"


def column(model, name):
    return model._meta.get_field(name)


# (serializer, field) of request bodies that are stored → the column they are stored in.
STORED = {
    ("EmailChangeSerializer", "email"): column(User, "email"),
    ("LabCreateSerializer", "name"): column(Lab, "name"),
    ("LabCreateSerializer", "slug"): column(Lab, "slug"),
    ("LabUpdateSerializer", "name"): column(Lab, "name"),
    ("BookingCreateSerializer", "purpose"): column(Booking, "purpose"),
    ("DecisionReasonSerializer", "reason"): column(Booking, "decision_reason"),
    ("BulkDecisionSerializer", "reason"): column(Booking, "decision_reason"),
    ("DecisionSerializer", "reason"): column(QuotaRequest, "decision_reason"),
    ("ChatChannelCreateSerializer", "name"): column(ChatChannel, "name"),
    ("ChatChannelCreateSerializer", "timezone"): column(ChatChannel, "timezone"),
    ("ChatChannelUpdateSerializer", "name"): column(ChatChannel, "name"),
    ("InvitationCreateSerializer", "email"): column(Invitation, "email"),
    ("InvitationSignUpSerializer", "username"): column(User, "username"),
    ("SeriesCreateSerializer", "purpose"): column(BookingSeries, "purpose"),
    ("SeriesCreateSerializer", "timezone"): column(BookingSeries, "timezone"),
    ("BudgetCreateSerializer", "currency"): column(Budget, "currency"),
    ("BudgetUpdateSerializer", "currency"): column(Budget, "currency"),
    ("CostCentreCreateSerializer", "code"): column(CostCentre, "code"),
    ("CostCentreCreateSerializer", "name"): column(CostCentre, "name"),
    ("CostCentreUpdateSerializer", "name"): column(CostCentre, "name"),
    ("DisplayCurrencyInputSerializer", "code"): column(DisplayCurrency, "code"),
    ("VolumeCreateSerializer", "region"): column(Volume, "region"),
    ("PlacementBookSerializer", "purpose"): column(Booking, "purpose"),
    ("WaitlistJoinSerializer", "purpose"): column(WaitlistEntry, "purpose"),
    ("WaitlistJoinSerializer", "gpu_model"): column(WaitlistEntry, "gpu_model"),
}
# Request fields that reach no length-limited column, and why.
NOT_STORED = {
    ("EmailVerifySerializer", "token"): "compared by hash",
    ("InvitationTokenSerializer", "token"): "compared by hash",
    ("InvitationAcceptSerializer", "token"): "compared by hash",
    ("InvitationSignUpSerializer", "token"): "compared by hash",
    ("InvitationSignUpSerializer", "password"): "hashed",
    ("LoginSerializer", "username"): "looked up",
    ("LoginSerializer", "password"): "checked",
    ("LdapLinkSerializer", "username"): "looked up in the directory",
    ("LdapLinkSerializer", "password"): "checked by the directory",
    ("ReasonSerializer", "reason"): "cancel, node destroy: audit data and TextFields",
    ("ChatChannelCreateSerializer", "url"): "sealed into a TextField",
    ("ChatChannelCreateSerializer", "secret"): "sealed into a TextField",
    ("ChatChannelUpdateSerializer", "url"): "sealed into a TextField",
    ("ChatChannelUpdateSerializer", "secret"): "sealed into a TextField",
    ("AgentHeartbeatRequestSerializer", "status"): "documents the body; health.limits checks it",
    ("DeepCheckRequestSerializer", "status"): "documents the body; health.limits checks it",
    (
        "SeriesCancelSerializer",
        "reason",
    ): "cancel: audit data and TextFields",
    ("AdjustmentInputSerializer", "adjustment_pct"): "parsed to a bounded Decimal",
    ("DisplayCurrencyInputSerializer", "rate"): "parsed to a bounded Decimal",
    ("PlacementBookSerializer", "gpu_model"): "matched against instance types' GPU model",
}


def all_serializers() -> list[type[serializers.BaseSerializer]]:
    found = set()
    for module in pkgutil.walk_packages(labgpu.__path__, "labgpu."):
        name = module.name
        if ".tests" in name or ".migrations" in name or "serializers" not in name.split("."):
            continue
        for obj in vars(importlib.import_module(name)).values():
            if (
                inspect.isclass(obj)
                and issubclass(obj, serializers.BaseSerializer)
                and obj.__module__.startswith("labgpu.")
                and hasattr(obj, "_declared_fields")
            ):
                found.add(obj)
    return sorted(found, key=lambda cls: (cls.__module__, cls.__name__))


def request_components() -> set[str]:
    schemas = yaml.safe_load(SCHEMA.read_text())["components"]["schemas"]
    return {
        name.removeprefix("Patched").removesuffix("Request")
        for name in schemas
        if name.endswith("Request")
    }


def text_fields(serializer: serializers.BaseSerializer):
    for name, field in serializer.fields.items():
        if (
            isinstance(field, serializers.CharField)
            and not field.read_only
            and not isinstance(field, serializers.IPAddressField)  # bounded by its format
        ):
            yield name, field


def test_the_walk_finds_every_apps_serializers():
    modules = {cls.__module__.split(".")[1] for cls in all_serializers()}
    assert {"accounts", "bookings", "catalog", "chat", "quotas", "invitations"} <= modules
    assert len(all_serializers()) > 80


def test_every_model_serializers_text_fits_its_column():
    too_long = []
    for cls in all_serializers():
        if not issubclass(cls, serializers.ModelSerializer) or not hasattr(cls, "Meta"):
            continue
        model = cls.Meta.model
        for name, field in text_fields(cls()):
            if "." in field.source or field.source == "*":
                continue
            try:
                target = model._meta.get_field(field.source)
            except Exception:
                continue
            limit = getattr(target, "max_length", None)
            if limit and (field.max_length is None or field.max_length > limit):
                too_long.append(f"{cls.__name__}.{name}: {field.max_length} > {target} {limit}")
    assert too_long == []


def test_every_plain_request_serializers_text_is_classified_and_fits():
    requests = request_components()
    unclassified, too_long = [], []
    for cls in all_serializers():
        if issubclass(cls, serializers.ModelSerializer):
            continue
        if cls.__name__.removesuffix("Serializer") not in requests:
            continue  # only ever an answer
        for name, field in text_fields(cls()):
            key = (cls.__name__, name)
            if key in NOT_STORED:
                continue
            if key not in STORED:
                unclassified.append(key)
                continue
            limit = STORED[key].max_length
            if field.max_length is None or field.max_length > limit:
                too_long.append(f"{cls.__name__}.{name}: {field.max_length} > {limit}")
    assert unclassified == []
    assert too_long == []


@pytest.fixture
def pending_booking(alice):
    return BookingFactory(user=alice, lab=alice.memberships.get().lab, status="pending")


@pytest.mark.django_db
@pytest.mark.parametrize("action", ["approve", "reject"])
def test_a_decision_reason_over_the_column_is_a_field_error(bob, pending_booking, action):
    reason = "r" * 501

    response = client_for(bob).post(
        f"/api/v1/bookings/{pending_booking.pk}/{action}/", {"reason": reason}, format="json"
    )

    assert response.status_code == 400, response.content
    assert "reason" in response.json()["extra"]["fields"]
    pending_booking.refresh_from_db()
    assert pending_booking.status == "pending" and pending_booking.decision_reason == ""


@pytest.mark.django_db
def test_a_bulk_decision_reason_over_the_column_is_a_field_error(bob, pending_booking):
    response = client_for(bob).post(
        "/api/v1/bookings/decide/",
        {"ids": [pending_booking.pk], "decision": "reject", "reason": "r" * 1000},
        format="json",
    )

    assert response.status_code == 400, response.content
    assert "reason" in response.json()["extra"]["fields"]
    pending_booking.refresh_from_db()
    assert pending_booking.status == "pending"


@pytest.mark.django_db
def test_an_invitation_address_over_the_column_is_a_field_error(bob, vision_lab):
    email = "a" * 60 + "@" + ".".join(["b" * 60] * 4) + ".org"  # 311 characters, well formed

    response = client_for(bob).post(
        f"/api/v1/labs/{vision_lab.pk}/invitations/", {"email": email}, format="json"
    )

    assert response.status_code == 400, response.content
    assert "email" in response.json()["extra"]["fields"]
    assert not Invitation.objects.exists()
