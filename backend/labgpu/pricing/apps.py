from django.apps import AppConfig
from django.db.models.signals import post_save


class PricingConfig(AppConfig):
    name = "labgpu.pricing"
    label = "pricing"

    def ready(self) -> None:
        from labgpu.catalog.models import InstanceType
        from labgpu.pricing.services import catalog_price_recorded

        def on_save(sender: type, instance: InstanceType, created: bool, **_: object) -> None:
            # A price typed into the catalog later is a change like any other: recorded from now.
            if not created:
                catalog_price_recorded(instance_type=instance)

        post_save.connect(on_save, sender=InstanceType, weak=False, dispatch_uid="pricing-catalog")
