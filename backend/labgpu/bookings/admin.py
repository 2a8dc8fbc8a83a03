from django.contrib import admin

from labgpu.bookings.models import Booking


@admin.register(Booking)
class BookingAdmin(admin.ModelAdmin):
    list_display = ["id", "pool", "lab", "user", "start", "end", "status", "slot"]
    list_filter = ["status", "pool", "lab"]
    search_fields = ["purpose", "user__username", "lab__name"]
    date_hierarchy = "start"
    readonly_fields = ["slot", "reserved_start", "reserved_end", "status_changed_at"]
