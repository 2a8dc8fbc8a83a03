from django.contrib.auth import get_user_model
from rest_framework import serializers

from labgpu.accounts.emails import email_is_verified
from labgpu.accounts.models import TIME_ZONES, ApiToken, Lab, Membership, SshKey, User
from labgpu.api.fields import AwareDateTimeField
from labgpu.api.serializers import CachedFieldsModelSerializer


class LabSummarySerializer(CachedFieldsModelSerializer):
    class Meta:
        model = Lab
        fields = ["id", "name", "slug"]


class MyMembershipSerializer(serializers.ModelSerializer):
    lab = LabSummarySerializer(read_only=True)

    class Meta:
        model = Membership
        fields = ["id", "lab", "role", "max_hours_per_week", "max_concurrent_bookings"]


class TimeZoneField(serializers.ChoiceField):
    """An IANA time-zone name this server knows (the schema's `TimezoneEnum`).

    DRF copies a serializer's declared fields for every instance, and a ChoiceField rebuilds three
    lookup tables from its choices each time: ~600 names on every `/me/`. This field shares one
    table, built at import.
    """

    _TABLE = {name: name for name in sorted(TIME_ZONES)}

    def __init__(self, **kwargs: object) -> None:
        super().__init__(choices=(), **kwargs)

    def _set_choices(self, choices: object) -> None:
        self.grouped_choices = self._choices = self.choice_strings_to_values = self._TABLE

    choices = property(serializers.ChoiceField._get_choices, _set_choices)


# Give it a user whose memberships come with their labs (accounts.selectors.user_with_labs), or it
# asks for each membership's lab on its own.
class MeSerializer(serializers.ModelSerializer):
    memberships = MyMembershipSerializer(many=True, read_only=True)
    is_site_admin = serializers.BooleanField(read_only=True)
    timezone = TimeZoneField()
    email = serializers.EmailField(
        required=False,
        allow_blank=True,
        max_length=254,
        help_text="The address in effect. Writing a new one mails a link to it; it takes effect "
        "(and counts for invitations and notifications) once the link is opened.",
    )
    email_verified = serializers.SerializerMethodField(
        help_text="The address in effect was proved (a link sent to it was opened)."
    )
    pending_email = serializers.CharField(
        read_only=True, help_text="An address waiting for its link to be opened, or empty."
    )

    class Meta:
        model = User
        fields = [
            "id",
            "username",
            "email",
            "first_name",
            "last_name",
            "timezone",
            "language",
            "is_site_admin",
            "memberships",
            "email_verified",
            "pending_email",
        ]
        read_only_fields = ["id", "username"]

    def get_email_verified(self, user: User) -> bool:
        return email_is_verified(user)


class EmailChangeSerializer(serializers.Serializer):
    email = serializers.EmailField(max_length=254)


class EmailVerifySerializer(serializers.Serializer):
    token = serializers.CharField(max_length=200)


class UserSummarySerializer(CachedFieldsModelSerializer):
    class Meta:
        model = User
        fields = ["id", "username", "first_name", "last_name"]


class LoginSerializer(serializers.Serializer):
    username = serializers.CharField(max_length=150)
    password = serializers.CharField(max_length=256, style={"input_type": "password"})


class SshKeySerializer(serializers.ModelSerializer):
    class Meta:
        model = SshKey
        fields = ["id", "name", "public_key", "fingerprint", "created_at"]
        read_only_fields = ["id", "fingerprint", "created_at"]
        extra_kwargs = {"public_key": {"max_length": 16384}}


class ApiTokenSerializer(serializers.ModelSerializer):
    scopes = serializers.ListField(
        child=serializers.ChoiceField(choices=ApiToken.Scope.choices), min_length=1
    )
    expires_at = AwareDateTimeField(required=False, allow_null=True)

    class Meta:
        model = ApiToken
        fields = [
            "id",
            "name",
            "prefix",
            "scopes",
            "expires_at",
            "last_used_at",
            "revoked_at",
            "created_at",
        ]
        read_only_fields = ["id", "prefix", "last_used_at", "revoked_at", "created_at"]


class ApiTokenCreatedSerializer(ApiTokenSerializer):
    token = serializers.CharField(read_only=True, help_text="Shown once; store it now.")

    class Meta(ApiTokenSerializer.Meta):
        fields = [*ApiTokenSerializer.Meta.fields, "token"]


class LabSerializer(serializers.ModelSerializer):
    my_role = serializers.SerializerMethodField()

    class Meta:
        model = Lab
        fields = ["id", "name", "slug", "my_role", "is_active", "created_at"]

    def get_my_role(self, lab: Lab) -> str | None:
        roles = self.context.get("my_roles", {})
        return roles.get(lab.pk)


class LabCreateSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=120)
    slug = serializers.SlugField(max_length=60, required=False, allow_blank=True, default="")


class LabUpdateSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=120, required=False)
    is_active = serializers.BooleanField(
        required=False, help_text="False archives the lab: it keeps its history, books nothing new."
    )


class MembershipSerializer(serializers.ModelSerializer):
    user = UserSummarySerializer(read_only=True)
    username = serializers.SlugRelatedField(
        source="user",
        slug_field="username",
        queryset=get_user_model().objects.filter(is_active=True),
        write_only=True,
    )

    class Meta:
        model = Membership
        fields = [
            "id",
            "user",
            "username",
            "role",
            "max_hours_per_week",
            "max_concurrent_bookings",
            "created_at",
        ]
        read_only_fields = ["id", "created_at"]


class MembershipUpdateSerializer(serializers.ModelSerializer):
    class Meta:
        model = Membership
        fields = ["role", "max_hours_per_week", "max_concurrent_bookings"]
