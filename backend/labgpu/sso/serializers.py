from rest_framework import serializers

from labgpu.accounts.models import Lab
from labgpu.accounts.selectors import labs_visible_to
from labgpu.api.fields import OwnPrimaryKeyRelatedField
from labgpu.sso.models import GroupMapping


class GroupMappingSerializer(serializers.ModelSerializer):
    lab = OwnPrimaryKeyRelatedField(
        queryset=Lab.objects.all(), visible_to=labs_visible_to, allow_null=True, required=False
    )
    lab_name = serializers.CharField(
        source="lab.name", read_only=True, allow_null=True, default=None
    )

    class Meta:
        model = GroupMapping
        fields = [
            "id",
            "source",
            "issuer",
            "group",
            "lab",
            "lab_name",
            "role",
            "active",
            "inactive_reason",
            "created_at",
            "updated_at",
        ]
        read_only_fields = ["id", "active", "inactive_reason", "created_at", "updated_at"]
        extra_kwargs = {
            "group": {"help_text": "LDAP: the group's full DN. OIDC: the claim's exact value."},
            "issuer": {"help_text": "OIDC only; empty means LABGPU_OIDC_ISSUER."},
        }
        # Uniqueness is the service's rule (DNs as DNs, OIDC values exactly), one 409.
        validators: list = []


class SsoProviderSerializer(serializers.Serializer):
    id = serializers.CharField()
    name = serializers.CharField(help_text="Shown as “Sign in with <name>”.")
    login_url = serializers.CharField(help_text="Send the browser here, with ?next=<SPA path>.")


class AuthProvidersSerializer(serializers.Serializer):
    password_login = serializers.BooleanField(
        help_text="Whether the login page offers the username and password form."
    )
    providers = SsoProviderSerializer(many=True)
