"""Django's PostgreSQL backend with a health check that costs no round trip when the connection
is plainly fine (base.py)."""
