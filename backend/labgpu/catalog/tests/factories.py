from decimal import Decimal

import factory

from labgpu.catalog.models import Blackout, InstanceType, NodePool, ProviderAccount


class ProviderAccountFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = ProviderAccount
        django_get_or_create = ["name"]

    name = "Emulator"
    kind = ProviderAccount.Kind.EMULATOR
    api_base_url = "http://127.0.0.1:8010"
    token_env_var = "LABGPU_PROVIDER_TOKEN_EMULATOR"


class InstanceTypeFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = InstanceType

    name = factory.Sequence(lambda n: f"MI300X ×1 #{n}")
    slug = factory.Sequence(lambda n: f"mi300x-1-{n}")
    provider_account = factory.SubFactory(ProviderAccountFactory)
    provider_size = "gpu-mi300x1-192gb"
    gpu_vendor = InstanceType.Vendor.AMD
    gpu_model = "MI300X"
    gpu_count = 1
    vram_gb_per_gpu = 192
    gpu_arch = "gfx942"
    price_per_hour = Decimal("1.99")


class NodePoolFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = NodePool

    name = factory.Sequence(lambda n: f"Pool {n}")
    slug = factory.Sequence(lambda n: f"pool-{n}")
    instance_type = factory.SubFactory(InstanceTypeFactory)
    region = "tor1"
    capacity = 2
    granularity_minutes = 30
    min_duration_minutes = 30
    max_duration_minutes = 24 * 60
    max_days_ahead = 30
    provisioning_lead_minutes = 10
    teardown_grace_minutes = 5


class BlackoutFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Blackout

    pool = factory.SubFactory(NodePoolFactory)
    reason = "Rack maintenance"
