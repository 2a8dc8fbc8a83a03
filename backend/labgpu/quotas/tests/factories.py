from decimal import Decimal

import factory

from labgpu.catalog.tests.factories import InstanceTypeFactory
from labgpu.quotas.models import Quota


class QuotaFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Quota

    lab = factory.SubFactory("labgpu.accounts.tests.factories.LabFactory")
    instance_type = factory.SubFactory(InstanceTypeFactory)
    gpu_hours = Decimal(1000)
