from rest_framework import serializers

from labgpu.pricing.models import InstanceTypePrice


class PriceRowSerializer(serializers.ModelSerializer):
    class Meta:
        model = InstanceTypePrice
        fields = [
            "effective_from",
            "provider_price_hourly",
            "provider_price_monthly",
            "adjustment_pct",
            "price_hourly",
            "source",
        ]
        read_only_fields = fields


class InstanceTypePriceSerializer(serializers.Serializer):
    instance_type = serializers.IntegerField()
    instance_type_name = serializers.CharField()
    provider_size = serializers.CharField()
    provider_price_hourly = serializers.DecimalField(
        max_digits=12, decimal_places=5, help_text="USD per hour, from the provider's /v2/sizes."
    )
    provider_price_monthly = serializers.DecimalField(
        max_digits=12, decimal_places=2, allow_null=True
    )
    adjustment_pct = serializers.DecimalField(
        max_digits=6, decimal_places=2, help_text="Site admin's percent: -10 = 10 % discount."
    )
    price_hourly = serializers.DecimalField(
        max_digits=12, decimal_places=5, help_text="USD per hour the lab pays."
    )
    price_hourly_converted = serializers.DecimalField(
        max_digits=16, decimal_places=2, allow_null=True, help_text="In the display currency."
    )
    effective_from = serializers.DateTimeField(allow_null=True)
    source = serializers.CharField()


class DisplayCurrencySerializer(serializers.Serializer):
    code = serializers.CharField(allow_blank=True, help_text='"" = amounts in USD only.')
    rate = serializers.DecimalField(
        max_digits=14, decimal_places=6, allow_null=True, help_text="Units of `code` per USD."
    )
    rate_date = serializers.DateField(allow_null=True)


class DisplayCurrencyInputSerializer(serializers.Serializer):
    code = serializers.CharField(allow_blank=True, max_length=3)
    rate = serializers.CharField(required=False, allow_blank=True, max_length=32)
    rate_date = serializers.DateField(required=False, allow_null=True)


class VolumePriceSerializer(serializers.Serializer):
    price_gb_month = serializers.DecimalField(max_digits=10, decimal_places=5)
    effective_from = serializers.DateTimeField(allow_null=True)


class PriceListSerializer(serializers.Serializer):
    currency = serializers.CharField(default="USD")
    instance_types = InstanceTypePriceSerializer(many=True)
    volume = VolumePriceSerializer()
    display_currency = DisplayCurrencySerializer(allow_null=True)


class AdjustmentInputSerializer(serializers.Serializer):
    adjustment_pct = serializers.CharField(
        max_length=16, help_text="Percent on the provider's price, -100 to 1000 (two decimals)."
    )


class SyncResultSerializer(serializers.Serializer):
    changed = serializers.ListField(child=serializers.DictField())
    unchanged = serializers.IntegerField()
    missing = serializers.ListField(child=serializers.CharField())
    errors = serializers.ListField(child=serializers.CharField())
    volume_changed = serializers.BooleanField()
