"""What the bookings app tells the apps above it, which it may not import (docs/architecture.md)."""

from django.dispatch import Signal

# A live booking of pool `pool_id` let its slot go, in the transaction that frees it (which holds
# the pool's lock: bookings.services.capacity_freed). The waitlist offers the freed time to its
# first entry in that same transaction (labgpu.waitlist.apps), so nobody booking directly takes
# it between the commit and a promotion task.
capacity_freed = Signal()
