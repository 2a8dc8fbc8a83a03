from django.utils.translation import gettext as _
from rest_framework import serializers

from labgpu.accounts.models import Lab
from labgpu.chat.kinds import MAX_SECRET, MAX_URL, SIGNATURE_HEADER
from labgpu.chat.models import SUBSCRIBABLE_EVENTS, ChatChannel, ChatDelivery

LANGUAGES = [("en", "English"), ("zh-hans", "简体中文")]


class ChatChannelSerializer(serializers.ModelSerializer):
    kind = serializers.ChoiceField(choices=ChatChannel.Kind.choices, read_only=True)
    hint = serializers.CharField(
        read_only=True,
        help_text="Scheme, host and the last four characters of the webhook URL; the URL and "
        "secret are never shown again after creation.",
    )
    lab_name = serializers.CharField(source="lab.name", read_only=True, allow_null=True)
    events = serializers.ListField(
        child=serializers.ChoiceField(choices=SUBSCRIBABLE_EVENTS), read_only=True
    )
    last_delivery_status = serializers.SerializerMethodField()

    class Meta:
        model = ChatChannel
        fields = [
            "id",
            "name",
            "kind",
            "hint",
            "lab",
            "lab_name",
            "events",
            "language",
            "timezone",
            "enabled",
            "last_delivery_status",
            "created_at",
        ]
        read_only_fields = fields

    def get_last_delivery_status(self, channel: ChatChannel) -> str | None:
        last = getattr(channel, "last_status", None)
        return last


class ChatChannelCreateSerializer(serializers.Serializer):
    kind = serializers.ChoiceField(choices=ChatChannel.Kind.choices)
    name = serializers.CharField(max_length=100)
    url = serializers.CharField(
        max_length=MAX_URL,
        write_only=True,
        help_text="The webhook URL the platform gave you (it is a secret: stored encrypted, never "
        "shown again).",
    )
    secret = serializers.CharField(
        max_length=MAX_SECRET,
        required=False,
        allow_blank=True,
        write_only=True,
        help_text="Feishu/Lark and DingTalk: the bot's signing secret (optional). Generic "
        f"webhook: required (16+ characters), signs `{SIGNATURE_HEADER}`.",
    )
    lab = serializers.PrimaryKeyRelatedField(
        queryset=Lab.objects.all(),
        required=False,
        allow_null=True,
        help_text="A lab you administer: the channel is the lab's. Empty: your own channel.",
    )
    events = serializers.ListField(
        child=serializers.ChoiceField(choices=SUBSCRIBABLE_EVENTS),
        required=False,
        max_length=len(SUBSCRIBABLE_EVENTS),
        help_text="The events posted to this channel (default: all).",
    )
    language = serializers.ChoiceField(choices=LANGUAGES, required=False)
    timezone = serializers.CharField(max_length=64, required=False, allow_blank=True)


class ChatChannelUpdateSerializer(serializers.Serializer):
    """What the owner may change; the kind and the owner stay what they were made."""

    name = serializers.CharField(max_length=100, required=False)
    events = serializers.ListField(
        child=serializers.ChoiceField(choices=SUBSCRIBABLE_EVENTS),
        required=False,
        max_length=len(SUBSCRIBABLE_EVENTS),
    )
    language = serializers.ChoiceField(choices=LANGUAGES, required=False)
    enabled = serializers.BooleanField(
        required=False, help_text="Off: nothing is posted (test messages still are)."
    )
    url = serializers.CharField(
        max_length=MAX_URL,
        required=False,
        write_only=True,
        help_text="A new webhook URL replacing the stored one (never shown again).",
    )
    secret = serializers.CharField(
        max_length=MAX_SECRET,
        required=False,
        allow_blank=True,
        write_only=True,
        help_text="A new signing secret replacing the stored one (never shown again).",
    )

    def validate(self, attrs: dict) -> dict:
        # A field this serializer does not take (kind, lab, user, hint…) would be ignored
        # silently; say so instead, so a client never believes it changed the owner.
        unknown = sorted(set(self.initial_data) - set(self.fields))
        if unknown:
            raise serializers.ValidationError(
                {name: [_("This field cannot be changed.")] for name in unknown[:10]}
            )
        return attrs


class ChatDeliverySerializer(serializers.ModelSerializer):
    status = serializers.ChoiceField(choices=ChatDelivery.Status.choices, read_only=True)

    class Meta:
        model = ChatDelivery
        fields = [
            "id",
            "event",
            "title",
            "status",
            "attempts",
            "http_status",
            "error",
            "created_at",
            "last_attempt_at",
            "sent_at",
        ]
        read_only_fields = fields
