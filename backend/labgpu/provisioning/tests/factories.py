import factory

from labgpu.bookings.tests.factories import BookingFactory
from labgpu.catalog.tests.factories import ProviderAccountFactory
from labgpu.provisioning.models import Node


class NodeFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Node

    booking = factory.SubFactory(BookingFactory, status="provisioning")
    provider_account = factory.SubFactory(ProviderAccountFactory)
    region = "tor1"
    size = "gpu-mi300x1-192gb"
    image = "gpu-amd-base"
    status = Node.Status.BOOTING
