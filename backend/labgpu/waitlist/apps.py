from django.apps import AppConfig


class WaitlistConfig(AppConfig):
    name = "labgpu.waitlist"
    label = "waitlist"

    def ready(self) -> None:
        from labgpu.bookings.signals import capacity_freed
        from labgpu.catalog.signals import capacity_added
        from labgpu.waitlist.services import promote_where_freed

        capacity_freed.connect(promote_where_freed, dispatch_uid="waitlist.promote_where_freed")
        capacity_added.connect(promote_where_freed, dispatch_uid="waitlist.promote_where_added")
