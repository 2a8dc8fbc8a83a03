from django.urls import path
from rest_framework.routers import SimpleRouter

from labgpu.bookings import apis
from labgpu.bookings.placement import apis as placement

router = SimpleRouter()
router.register("bookings", apis.BookingViewSet, basename="booking")
router.register("series", apis.SeriesViewSet, basename="series")
router.register("pools", apis.PoolCalendarViewSet, basename="pool")
router.register("blackouts", apis.BlackoutViewSet, basename="blackout")
router.register("notifications", apis.NotificationViewSet, basename="notification")

urlpatterns = [
    path(
        "availability/placement/",
        placement.PlacementAvailabilityView.as_view(),
        name="placement-availability",
    ),
    path("bookings/place/", placement.PlacementBookView.as_view(), name="booking-place"),
    path(
        "pools/<int:pk>/free-windows/", apis.PoolFreeWindowsView.as_view(), name="pool-free-windows"
    ),
    *router.urls,
]
# /bookings/ answers a token's plain create without DRF's machinery (apis.booking_create_by_token).
for _pattern in urlpatterns:
    if getattr(_pattern, "name", None) == "booking-list":
        _pattern.callback = apis.booking_collection_view()
