"""The lifecycle: bookings become droplets and back. Every step is safe to run twice.

Status changes go through `transition()` (compare-and-swap), so a retried or duplicated task, a
sweep and a user's cancel can race without two of them acting. Provider calls happen outside
database transactions; what they produce is recorded with conditional UPDATEs afterwards.

One module per concern, each importing only those below it:

- `sweeps`    — beat's booking sweeps: start due bookings, end and wind down, remind, warn;
- `reconciliation` — the provider and our nodes agree (I-3), the ledger is complete (I-8);
- `nodes`     — the node steps the tasks run: create/adopt, poll, drain, destroy, fail, replace;
- `agent`     — what a passing agent report does: hand the node and its booking over (I-5).

Services never import provisioning/tasks.py (the tasks call them); they enqueue by task name
through `labgpu.provisioning.dispatch`.
"""
