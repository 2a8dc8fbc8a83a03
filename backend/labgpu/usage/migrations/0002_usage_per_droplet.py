"""One usage record per droplet (I-8): key records by provider account and droplet id."""

import django.db.models.deletion
from django.db import migrations, models


def fill_droplet(apps, schema_editor):
    UsageRecord = apps.get_model("usage", "UsageRecord")
    for record in UsageRecord.objects.select_related("node"):
        record.provider_account_id = record.node.provider_account_id
        record.droplet_id = record.node.provider_id or f"node-{record.node_id}"
        record.save(update_fields=["provider_account", "droplet_id"])


class Migration(migrations.Migration):
    dependencies = [
        ("catalog", "0002_bounds"),
        ("provisioning", "0003_attempt_bound"),
        ("usage", "0001_initial"),
    ]

    operations = [
        migrations.AlterField(
            model_name="usagerecord",
            name="node",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.PROTECT,
                related_name="usage_records",
                to="provisioning.node",
            ),
        ),
        migrations.AddField(
            model_name="usagerecord",
            name="provider_account",
            field=models.ForeignKey(
                null=True,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="+",
                to="catalog.provideraccount",
            ),
        ),
        migrations.AddField(
            model_name="usagerecord",
            name="droplet_id",
            field=models.CharField(default="", max_length=64),
            preserve_default=False,
        ),
        migrations.RunPython(fill_droplet, migrations.RunPython.noop),
        migrations.AlterField(
            model_name="usagerecord",
            name="provider_account",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.PROTECT,
                related_name="+",
                to="catalog.provideraccount",
            ),
        ),
        migrations.AddConstraint(
            model_name="usagerecord",
            constraint=models.UniqueConstraint(
                fields=("provider_account", "droplet_id"), name="usage_one_record_per_droplet"
            ),
        ),
    ]
