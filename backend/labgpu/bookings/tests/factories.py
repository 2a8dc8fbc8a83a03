from datetime import UTC, datetime, timedelta

import factory

from labgpu.bookings.models import Booking


class BookingFactory(factory.django.DjangoModelFactory):
    """A booking row as written, without the service's rules: for tests of what comes after."""

    class Meta:
        model = Booking

    lab = factory.SubFactory("labgpu.accounts.tests.factories.LabFactory")
    user = factory.SubFactory("labgpu.accounts.tests.factories.UserFactory")
    pool = factory.SubFactory("labgpu.catalog.tests.factories.NodePoolFactory")
    start = datetime(2030, 1, 1, 10, tzinfo=UTC)
    end = factory.LazyAttribute(lambda b: b.start + timedelta(hours=1))
    reserved_start = factory.LazyAttribute(lambda b: b.start)
    reserved_end = factory.LazyAttribute(lambda b: b.end)
    slot = 0
    status = Booking.Status.SCHEDULED
    gpu_count = 1
    price_per_hour = 1
