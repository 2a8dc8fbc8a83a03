from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("chat", "0001_initial"),
    ]

    operations = [
        migrations.AddField(
            model_name="chatchannel",
            name="enabled",
            field=models.BooleanField(default=True),
        ),
    ]
