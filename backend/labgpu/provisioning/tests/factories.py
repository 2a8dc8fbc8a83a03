import factory

from labgpu.bookings.tests.factories import BookingFactory
from labgpu.catalog.tests.factories import ProviderAccountFactory
from labgpu.core.timeutils import now
from labgpu.provisioning.models import Node

# A ready node is usable by construction (the database refuses anything else): it has its
# droplet, an address and a passing report.
_ready = factory.LazyAttribute(lambda node: node.status == Node.Status.READY)


class NodeFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Node

    booking = factory.SubFactory(BookingFactory, status="provisioning")
    provider_account = factory.SubFactory(ProviderAccountFactory)
    region = "tor1"
    size = "gpu-mi300x1-192gb"
    image = "gpu-amd-base"
    status = Node.Status.BOOTING
    provider_id = factory.Maybe(_ready, factory.Sequence(lambda n: str(4000 + n)), "")
    public_ip = factory.Maybe(_ready, factory.Sequence(lambda n: f"192.0.2.{n % 250 + 1}"), None)
    passed_at = factory.Maybe(_ready, factory.LazyFunction(now), None)
