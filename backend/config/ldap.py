"""LDAP / Active Directory sign-in, configured from the environment (docs/operations.md, "LDAP and
Active Directory"). Off unless LABGPU_LDAP_SERVER_URI is set.

`ldap_settings` turns LABGPU_LDAP_* variables into django-auth-ldap's AUTH_LDAP_* settings
(https://django-auth-ldap.readthedocs.io/en/latest/reference.html); the tests feed it the same
variables they would set in production, pointed at their own slapd.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.core.exceptions import ImproperlyConfigured

from labgpu import egress

LDAP_BACKEND = "labgpu.directory.backend.LdapBackend"

# LABGPU_LDAP_GROUP_TYPE → (django-auth-ldap group type class, default group filter).
GROUP_TYPES = {
    "groupOfNames": ("GroupOfNamesType", "(objectClass=groupOfNames)"),
    "nestedGroupOfNames": ("NestedGroupOfNamesType", "(objectClass=groupOfNames)"),
    "groupOfUniqueNames": ("GroupOfUniqueNamesType", "(objectClass=groupOfUniqueNames)"),
    "posixGroup": ("PosixGroupType", "(objectClass=posixGroup)"),
    "activeDirectory": ("ActiveDirectoryGroupType", "(objectClass=group)"),
    "nestedActiveDirectory": ("NestedActiveDirectoryGroupType", "(objectClass=group)"),
}
USER_ATTRLIST = ["*", "entryUUID", "objectGUID"]
DEFAULT_ATTR_MAP = "first_name=givenName,last_name=sn,email=mail"


def _flag(environ: Mapping[str, str], name: str, default: bool = False) -> bool:
    return environ.get(name, str(default)).strip().lower() in {"1", "true", "yes", "on"}


def _attr_map(spec: str) -> dict[str, str]:
    mapping = {}
    for pair in filter(None, (item.strip() for item in spec.split(","))):
        field, sep, attribute = pair.partition("=")
        if not sep or field.strip() not in {"first_name", "last_name", "email"}:
            raise ImproperlyConfigured(
                f"LABGPU_LDAP_ATTR_MAP: {pair!r} is not field=attribute with a field of "
                "first_name, last_name, email"
            )
        mapping[field.strip()] = attribute.strip()
    return mapping


class CheckedServerUri(str):
    """AUTH_LDAP_SERVER_URI through the one egress policy (labgpu.egress): django-auth-ldap calls
    a callable URI before each connection, and this one resolves each host once through
    `egress.POLICY` (the operator's own URI may be internal: it is listed as their choice) and,
    for plain `ldap://` without StartTLS, hands libldap the checked address, so it does not
    resolve again. With TLS the name stays (libldap checks the certificate against it).
    Still a str, equal to the configured URI: the directory's identity (LABGPU_LDAP_DIRECTORY_ID
    by default) and `ldap_configured` read it as one."""

    start_tls: bool = False

    def __call__(self, request: Any = None) -> str:
        uris = []
        for uri in str(self).split():
            destination = egress.POLICY.check(uri, egress.Exemptions(origins=(uri,)))
            if destination.scheme == "ldap" and not self.start_tls:
                host = destination.address
                host = f"[{host}]" if ":" in host else host
                uri = f"ldap://{host}:{destination.port}/"
            uris.append(uri)
        return " ".join(uris)


def ldap_settings(environ: Mapping[str, str]) -> dict[str, Any]:
    """The AUTH_LDAP_* settings for `environ`, or {} when LDAP sign-in is not configured."""
    uri = environ.get("LABGPU_LDAP_SERVER_URI", "").strip()
    if not uri:
        return {}
    # Imported only when configured: python-ldap loads libldap, which a laptop may not need.
    import ldap
    from django_auth_ldap import config as ldap_config

    timeout = float(environ.get("LABGPU_LDAP_TIMEOUT_S", "5"))
    options: dict[int, Any] = {
        ldap.OPT_NETWORK_TIMEOUT: timeout,
        ldap.OPT_TIMEOUT: timeout,
        # Active Directory answers searches at the domain root with referrals that libldap would
        # chase anonymously (and fail); Microsoft's advice is not to follow them.
        ldap.OPT_REFERRALS: 0,
    }
    ca_file = environ.get("LABGPU_LDAP_CA_CERT_FILE", "").strip()
    if ca_file:
        options[ldap.OPT_X_TLS_CACERTFILE] = ca_file
        options[ldap.OPT_X_TLS_REQUIRE_CERT] = ldap.OPT_X_TLS_DEMAND
        options[ldap.OPT_X_TLS_NEWCTX] = 0  # must come last: applies the TLS options above

    server_uri = CheckedServerUri(uri)
    server_uri.start_tls = _flag(environ, "LABGPU_LDAP_START_TLS")
    result: dict[str, Any] = {
        "AUTH_LDAP_SERVER_URI": server_uri,
        "AUTH_LDAP_BIND_DN": environ.get("LABGPU_LDAP_BIND_DN", ""),
        "AUTH_LDAP_BIND_PASSWORD": environ.get("LABGPU_LDAP_BIND_PASSWORD", ""),
        "AUTH_LDAP_START_TLS": _flag(environ, "LABGPU_LDAP_START_TLS"),
        "AUTH_LDAP_CONNECTION_OPTIONS": options,
        "AUTH_LDAP_USER_ATTR_MAP": _attr_map(environ.get("LABGPU_LDAP_ATTR_MAP", DEFAULT_ATTR_MAP)),
        # The directory is the source of truth for names and e-mail: refresh them at each login.
        "AUTH_LDAP_ALWAYS_UPDATE_USER": True,
        # The entry's own identity (operational attributes, returned only when asked for):
        # accounts are bound by it, never by a username (labgpu.directory.ldap_client).
        "AUTH_LDAP_USER_ATTRLIST": USER_ATTRLIST,
        # Lab membership comes from groups through labgpu.sso's mappings, not Django groups.
        "AUTH_LDAP_MIRROR_GROUPS": False,
        "AUTH_LDAP_FIND_GROUP_PERMS": False,
    }

    template = environ.get("LABGPU_LDAP_USER_DN_TEMPLATE", "").strip()
    search_base = environ.get("LABGPU_LDAP_USER_SEARCH_BASE", "").strip()
    if search_base:
        result["AUTH_LDAP_USER_SEARCH"] = ldap_config.LDAPSearch(
            search_base,
            ldap.SCOPE_SUBTREE,
            environ.get("LABGPU_LDAP_USER_SEARCH_FILTER", "(uid=%(user)s)"),
            attrlist=USER_ATTRLIST,
        )
    elif template:
        result["AUTH_LDAP_USER_DN_TEMPLATE"] = template
    else:
        raise ImproperlyConfigured(
            "LABGPU_LDAP_SERVER_URI is set: set LABGPU_LDAP_USER_SEARCH_BASE (with "
            "LABGPU_LDAP_USER_SEARCH_FILTER) or LABGPU_LDAP_USER_DN_TEMPLATE too"
        )

    group_base = environ.get("LABGPU_LDAP_GROUP_SEARCH_BASE", "").strip()
    if group_base:
        kind = environ.get("LABGPU_LDAP_GROUP_TYPE", "groupOfNames").strip()
        if kind not in GROUP_TYPES:
            raise ImproperlyConfigured(
                f"LABGPU_LDAP_GROUP_TYPE must be one of {', '.join(GROUP_TYPES)}, not {kind!r}"
            )
        class_name, default_filter = GROUP_TYPES[kind]
        result["AUTH_LDAP_GROUP_SEARCH"] = ldap_config.LDAPSearch(
            group_base,
            ldap.SCOPE_SUBTREE,
            environ.get("LABGPU_LDAP_GROUP_SEARCH_FILTER", default_filter),
        )
        result["AUTH_LDAP_GROUP_TYPE"] = getattr(ldap_config, class_name)()
    return result
