from rest_framework import serializers

from labgpu.api.fields import OwnPrimaryKeyRelatedField
from labgpu.catalog.models import NodePool
from labgpu.catalog.selectors import pools_visible_to
from labgpu.feeds.models import CalendarFeed

KIND_HELP = "`user`: your own bookings; `pool`: every booking of one pool (others' as Busy)."


class CalendarFeedSerializer(serializers.ModelSerializer):
    kind = serializers.ChoiceField(
        choices=CalendarFeed.Kind.choices, read_only=True, help_text=KIND_HELP
    )
    pool_name = serializers.CharField(source="pool.name", read_only=True, allow_null=True)
    revoked_at = serializers.DateTimeField(
        source="ended_at",
        read_only=True,
        allow_null=True,
        help_text="When the feed stopped working: revoked, or the API token that made it was "
        "revoked or expired.",
    )
    created_by_token = serializers.PrimaryKeyRelatedField(
        read_only=True,
        allow_null=True,
        help_text="The API token that made the feed (it dies with it); null when made in a "
        "signed-in session.",
    )

    class Meta:
        model = CalendarFeed
        fields = [
            "id",
            "kind",
            "pool",
            "pool_name",
            "prefix",
            "created_by_token",
            "created_at",
            "revoked_at",
        ]
        read_only_fields = fields


class CalendarFeedCreateSerializer(serializers.Serializer):
    kind = serializers.ChoiceField(choices=CalendarFeed.Kind.choices, help_text=KIND_HELP)
    pool = OwnPrimaryKeyRelatedField(
        queryset=NodePool.objects.all(),
        visible_to=pools_visible_to,
        required=False,
        allow_null=True,
        help_text="Required for a `pool` feed.",
    )


class CalendarFeedCreatedSerializer(CalendarFeedSerializer):
    """Returned once, by create: the subscription URL carries the secret."""

    token = serializers.CharField(read_only=True)
    url = serializers.URLField(read_only=True)

    class Meta(CalendarFeedSerializer.Meta):
        fields = [*CalendarFeedSerializer.Meta.fields, "token", "url"]
        read_only_fields = fields
