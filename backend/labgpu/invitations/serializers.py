from rest_framework import serializers

from labgpu.accounts.models import Membership
from labgpu.accounts.serializers import LabSummarySerializer, UserSummarySerializer
from labgpu.invitations.models import Invitation


class InvitationSerializer(serializers.ModelSerializer):
    """An invitation as its lab's admins see it."""

    invited_by = UserSummarySerializer(read_only=True, allow_null=True)
    status = serializers.ChoiceField(choices=Invitation.Status.choices, read_only=True)

    class Meta:
        model = Invitation
        fields = [
            "id",
            "email",
            "role",
            "status",
            "invited_by",
            "expires_at",
            "accepted_at",
            "revoked_at",
            "created_at",
        ]
        read_only_fields = ["id", "expires_at", "accepted_at", "revoked_at", "created_at"]


class InvitationCreatedSerializer(InvitationSerializer):
    """Create answers once with the link, as API tokens do, for when the e-mail goes astray."""

    link = serializers.CharField(read_only=True)

    class Meta(InvitationSerializer.Meta):
        fields = [*InvitationSerializer.Meta.fields, "link"]


class InvitationCreateSerializer(serializers.Serializer):
    email = serializers.EmailField(max_length=Invitation._meta.get_field("email").max_length)
    role = serializers.ChoiceField(choices=Membership.Role.choices, default=Membership.Role.MEMBER)


class InvitationTokenSerializer(serializers.Serializer):
    token = serializers.CharField(max_length=200)


class InvitationPreviewSerializer(serializers.Serializer):
    """What the link holder may see before accepting: which lab, from whom, for which address."""

    lab = LabSummarySerializer()
    role = serializers.ChoiceField(choices=Membership.Role.choices)
    email = serializers.EmailField()
    invited_by = serializers.CharField(allow_null=True)
    expires_at = serializers.DateTimeField()
    status = serializers.ChoiceField(choices=Invitation.Status.choices)
    signup_allowed = serializers.BooleanField(
        help_text="A local account may be made from this invitation (local sign-in is on and no "
        "account has proved the invited address)."
    )
    address_matches = serializers.BooleanField(
        allow_null=True,
        help_text="Signed in: whether the invitation went to your account's verified address "
        "(if not, accepting needs `confirm_other_address`). Signed out: null.",
    )


class InvitationAcceptSerializer(InvitationTokenSerializer):
    confirm_other_address = serializers.BooleanField(
        default=False,
        help_text="Join although the invitation went to another address than your verified one "
        "(the inviter is told).",
    )


class InvitationSignUpSerializer(InvitationTokenSerializer):
    username = serializers.CharField(max_length=150)
    password = serializers.CharField(max_length=200, style={"input_type": "password"})


class InvitationAcceptedSerializer(serializers.Serializer):
    lab = LabSummarySerializer()
    role = serializers.ChoiceField(choices=Membership.Role.choices)
