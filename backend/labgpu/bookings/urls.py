from django.urls import URLPattern
from rest_framework.routers import SimpleRouter

from labgpu.bookings import apis
from labgpu.bookings.express import with_express_lane

router = SimpleRouter()
router.register("bookings", apis.BookingViewSet, basename="booking")
router.register("pools", apis.PoolCalendarViewSet, basename="pool")


def _route(pattern: URLPattern) -> URLPattern:
    """`POST /api/v1/bookings/` with a token tries the express lane first (bookings/express.py)."""
    if pattern.name != "booking-list":
        return pattern
    return URLPattern(
        pattern.pattern, with_express_lane(pattern.callback), pattern.default_args, pattern.name
    )


urlpatterns = [_route(pattern) for pattern in router.urls]
