"""The Celery app. Broker: Redis when CELERY_BROKER_URL is set (PostgreSQL mode, compose, CI);
otherwise kombu's filesystem transport under var/, the embedded default that needs no server.
The beat schedule lives here in code (django-celery-beat does not support Django 6.1 yet)."""

import os
from pathlib import Path

from celery import Celery
from celery.signals import worker_process_init

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("labgpu")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


def filesystem_broker(var_dir: Path) -> tuple[str, dict[str, object]]:
    folders = {name: var_dir / "celery" / name for name in ("queue", "processed")}
    for folder in folders.values():
        folder.mkdir(parents=True, exist_ok=True)
    return "filesystem://", {
        "data_folder_in": str(folders["queue"]),
        "data_folder_out": str(folders["queue"]),
        "processed_folder": str(folders["processed"]),
        "store_processed": False,
    }


@worker_process_init.connect
def _fresh_connections(**_: object) -> None:
    # A forked worker must not share the parent's database connections.
    from django.db import connections

    for connection in connections.all():
        connection.close_if_unusable_or_obsolete()
