from django.db.models import QuerySet
from rest_framework import serializers

from labgpu.accounts.models import Lab, User
from labgpu.accounts.selectors import labs_visible_to
from labgpu.accounts.serializers import LabSummarySerializer
from labgpu.api.fields import AcceptedDateField, AwareDateTimeField, OwnPrimaryKeyRelatedField
from labgpu.budgets.models import Budget, CostCentre
from labgpu.budgets.selectors import cost_centres_visible_to


class CostCentreSerializer(serializers.ModelSerializer):
    default_for = serializers.SerializerMethodField(
        help_text="Ids of the members whose bookings carry it unless they name another."
    )

    class Meta:
        model = CostCentre
        fields = ["id", "lab", "code", "name", "is_active", "default_for", "created_at"]
        read_only_fields = fields

    def get_default_for(self, centre: CostCentre) -> list[int]:
        return sorted(m.user_id for m in centre.default_memberships)  # type: ignore[attr-defined]


class CostCentreCreateSerializer(serializers.Serializer):
    lab = OwnPrimaryKeyRelatedField(queryset=Lab.objects.all(), visible_to=labs_visible_to)
    code = serializers.CharField(max_length=64)
    name = serializers.CharField(max_length=200, required=False, allow_blank=True, default="")


class CostCentreUpdateSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=200, required=False, allow_blank=True)
    is_active = serializers.BooleanField(required=False)


def _lab_members(user: User) -> QuerySet[User]:
    return User.objects.filter(memberships__lab__in=labs_visible_to(user)).distinct()


class CostCentreDefaultSerializer(serializers.Serializer):
    lab = OwnPrimaryKeyRelatedField(queryset=Lab.objects.all(), visible_to=labs_visible_to)
    user = OwnPrimaryKeyRelatedField(queryset=User.objects.all(), visible_to=_lab_members)
    cost_centre = OwnPrimaryKeyRelatedField(
        queryset=CostCentre.objects.all(),
        visible_to=cost_centres_visible_to,
        allow_null=True,
        help_text="null: the member's bookings carry no cost centre unless they name one.",
    )


class BudgetSerializer(serializers.ModelSerializer):
    """A budget with its current period: what is consumed, forecast and committed in it."""

    lab = LabSummarySerializer(read_only=True)
    cost_centre_code = serializers.CharField(
        source="cost_centre.code", read_only=True, allow_null=True, default=None
    )
    period_start = serializers.DateTimeField(source="current.begin", read_only=True)
    period_end = serializers.DateTimeField(source="current.end", read_only=True)
    consumed = serializers.DecimalField(
        max_digits=14, decimal_places=2, source="current.spend.consumed", read_only=True
    )
    forecast = serializers.DecimalField(
        max_digits=14,
        decimal_places=2,
        source="current.spend.forecast",
        read_only=True,
        help_text="Running bookings priced to their end.",
    )
    committed = serializers.DecimalField(
        max_digits=14,
        decimal_places=2,
        source="current.spend.committed",
        read_only=True,
        help_text="Bookings not yet started, priced at the current hourly price.",
    )
    projected = serializers.DecimalField(
        max_digits=14,
        decimal_places=2,
        source="current.spend.total",
        read_only=True,
        help_text="consumed + forecast + committed: what the period comes to as booked.",
    )
    left = serializers.DecimalField(
        max_digits=14, decimal_places=2, source="current.left", read_only=True
    )
    percent = serializers.DecimalField(
        max_digits=20, decimal_places=1, source="current.percent_after", read_only=True
    )

    class Meta:
        model = Budget
        fields = [
            "id",
            "lab",
            "cost_centre",
            "cost_centre_code",
            "period",
            "starts_on",
            "ends_on",
            "amount",
            "currency",
            "enforcement",
            "period_start",
            "period_end",
            "consumed",
            "forecast",
            "committed",
            "projected",
            "left",
            "percent",
        ]
        read_only_fields = fields


class BudgetCreateSerializer(serializers.Serializer):
    lab = OwnPrimaryKeyRelatedField(queryset=Lab.objects.all(), visible_to=labs_visible_to)
    cost_centre = OwnPrimaryKeyRelatedField(
        queryset=CostCentre.objects.all(),
        visible_to=cost_centres_visible_to,
        required=False,
        allow_null=True,
        default=None,
    )
    period = serializers.ChoiceField(choices=Budget.Period.choices, default=Budget.Period.MONTH)
    starts_on = AcceptedDateField(required=False, allow_null=True, default=None)
    ends_on = AcceptedDateField(required=False, allow_null=True, default=None)
    amount = serializers.DecimalField(max_digits=12, decimal_places=2, min_value=0)
    currency = serializers.CharField(max_length=3, default="USD")
    enforcement = serializers.ChoiceField(
        choices=Budget.Enforcement.choices, default=Budget.Enforcement.SOFT
    )


class BudgetUpdateSerializer(serializers.Serializer):
    period = serializers.ChoiceField(choices=Budget.Period.choices, required=False)
    starts_on = AcceptedDateField(required=False, allow_null=True)
    ends_on = AcceptedDateField(required=False, allow_null=True)
    amount = serializers.DecimalField(max_digits=12, decimal_places=2, min_value=0, required=False)
    currency = serializers.CharField(max_length=3, required=False)
    enforcement = serializers.ChoiceField(choices=Budget.Enforcement.choices, required=False)


class BudgetQuerySerializer(serializers.Serializer):
    at = AwareDateTimeField(required=False)
