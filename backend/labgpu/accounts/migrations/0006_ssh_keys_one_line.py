"""Keys stored before keys were parsed (issue 22 item 8): each becomes the line rebuilt from the
parsed key, and a row that is not exactly one key (an embedded newline, authorized_keys options,
a damaged body) is deleted, named in the log, so its owner adds it again and sees why."""

import logging

from django.db import migrations

from labgpu.providers.ssh_keys import InvalidSshKey, parse_ssh_public_key

logger = logging.getLogger(__name__)


def rebuild_stored_keys(apps, schema_editor):
    SshKey = apps.get_model("accounts", "SshKey")
    for row in SshKey.objects.all().iterator():
        try:
            key = parse_ssh_public_key(row.public_key)
        except InvalidSshKey as error:
            logger.warning(
                "deleting SSH key %s (%r) of user %s: not one OpenSSH public key (%s)",
                row.pk,
                row.name,
                row.user_id,
                error,
            )
            row.delete()
            continue
        if (row.public_key, row.fingerprint) != (key.line, key.fingerprint):
            row.public_key, row.fingerprint = key.line, key.fingerprint
            row.save(update_fields=["public_key", "fingerprint"])


class Migration(migrations.Migration):
    dependencies = [("accounts", "0005_email_verification")]

    operations = [migrations.RunPython(rebuild_stored_keys, migrations.RunPython.noop)]
