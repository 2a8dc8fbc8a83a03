"""Keys other apps leave in a signed-in session for the accounts views."""

# Where the browser goes after the API logout ends the session: a single sign-on provider's
# end-session URL (RP-initiated logout), set by labgpu.sso at sign-in. Absent: the SPA's login page.
LOGOUT_REDIRECT_SESSION_KEY = "labgpu_logout_redirect"
