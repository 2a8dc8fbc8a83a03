from rest_framework import serializers

# One enum in the schema for both serializers' `kind` (SPECTACULAR_SETTINGS ENUM_NAME_OVERRIDES).
IDENTITY_KINDS = ["oidc", "ldap"]


class LinkedIdentitySerializer(serializers.Serializer):
    kind = serializers.ChoiceField(choices=IDENTITY_KINDS)
    provider = serializers.CharField(help_text="The OIDC issuer, or the directory.")
    identifier = serializers.CharField(help_text="The OIDC subject, or the directory entry's DN.")
    link_method = serializers.CharField()
    created_at = serializers.DateTimeField()


class MyIdentitiesSerializer(serializers.Serializer):
    identities = LinkedIdentitySerializer(many=True)
    oidc_link_url = serializers.CharField(
        allow_null=True,
        help_text="Send the browser here (with &next=<SPA path>) to link your account at the "
        "OpenID Provider; null when OIDC is off or you are linked there already.",
    )
    ldap_link = serializers.BooleanField(
        help_text="Whether POST me/identities/ldap/ can link a directory entry now."
    )


class LdapLinkSerializer(serializers.Serializer):
    username = serializers.CharField(max_length=150)
    password = serializers.CharField(max_length=1024, trim_whitespace=False, write_only=True)


class IdentityLinkSerializer(LinkedIdentitySerializer):
    id = serializers.IntegerField()
    user = serializers.CharField(help_text="The local account's username.")
    is_site_admin = serializers.BooleanField()
    confirmed_at = serializers.DateTimeField(allow_null=True)


class IdentityLinkRefSerializer(serializers.Serializer):
    kind = serializers.ChoiceField(choices=IDENTITY_KINDS)
    id = serializers.IntegerField(min_value=1, max_value=2**63 - 1)
