from django.urls import path
from rest_framework.routers import SimpleRouter

from labgpu.bookings import apis

router = SimpleRouter()
router.register("bookings", apis.BookingViewSet, basename="booking")
router.register("pools", apis.PoolCalendarViewSet, basename="pool")
router.register("blackouts", apis.BlackoutViewSet, basename="blackout")
router.register("notifications", apis.NotificationViewSet, basename="notification")

urlpatterns = [
    path(
        "pools/<int:pk>/free-windows/", apis.PoolFreeWindowsView.as_view(), name="pool-free-windows"
    ),
    *router.urls,
]
