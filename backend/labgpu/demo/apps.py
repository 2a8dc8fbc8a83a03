from django.apps import AppConfig


class DemoConfig(AppConfig):
    """Demo data for `make run`, the browser tests and the benches (`manage.py seed_demo`).

    It sits above every other app: it creates people, labs, the catalog, quotas and bookings
    through their services, and nothing imports it."""

    name = "labgpu.demo"
    label = "demo"
