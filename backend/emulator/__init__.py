"""A local server that speaks the subset of DigitalOcean's API v2 that LabGPU uses.

Run it with `python -m emulator --port 8010 --state-file var/emulator.json` from `backend/`;
see docs/providers.md for the fault-injection API.
"""
