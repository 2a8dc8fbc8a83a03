from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from labgpu.catalog.models import NodePool
from labgpu.feeds.models import CalendarFeed

KIND_HELP = "`user`: your own bookings; `pool`: every booking of one pool (others' as Busy)."


# A plain string in the schema: an enum named "kind" would collide with ProviderAccount.kind
# (drf-spectacular then fails the build with a naming warning; see the report to the lead).
@extend_schema_field({"type": "string", "pattern": "^(user|pool)$", "description": KIND_HELP})
class FeedKindField(serializers.ChoiceField):
    pass


class CalendarFeedSerializer(serializers.ModelSerializer):
    kind = FeedKindField(choices=CalendarFeed.Kind.choices, read_only=True)
    pool_name = serializers.CharField(source="pool.name", read_only=True, allow_null=True)

    class Meta:
        model = CalendarFeed
        fields = ["id", "kind", "pool", "pool_name", "prefix", "created_at", "revoked_at"]
        read_only_fields = fields


class CalendarFeedCreateSerializer(serializers.Serializer):
    kind = FeedKindField(choices=CalendarFeed.Kind.choices)
    pool = serializers.PrimaryKeyRelatedField(
        queryset=NodePool.objects.all(),
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
