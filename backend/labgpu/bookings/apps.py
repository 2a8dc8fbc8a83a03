from django.apps import AppConfig


class BookingsConfig(AppConfig):
    name = "labgpu.bookings"
    label = "bookings"
