"""What the catalog tells the apps above it, which it may not import (docs/architecture.md)."""

from django.dispatch import Signal

# Pool `pool_id` can hold more than before (more capacity, or opened again), in the transaction
# that saves it (which holds the pool's row). The waitlist offers the new room to its first
# entries in that same transaction (labgpu.waitlist.apps), as it does a freed slot
# (bookings.signals.capacity_freed), so nobody booking directly takes it before the line.
capacity_added = Signal()
