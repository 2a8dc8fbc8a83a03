from datetime import timedelta
from decimal import Decimal

import pytest

from labgpu.catalog.models import ProviderAccount
from labgpu.catalog.tests.factories import InstanceTypeFactory, NodePoolFactory
from labgpu.core.timeutils import month_start, next_month, now
from labgpu.provisioning.tests.harness import (
    VENV_BIN,
    Beat,
    Worker,
    scale_lifecycle_timings,
    scaled_bound,
    worker_env,
)
from labgpu.quotas.models import Quota

EMULATOR_TOKEN = "emulator-test-token"


@pytest.fixture
def emulator(tmp_path):
    from emulator.testing import start_emulator

    handle = start_emulator(
        tmp_path / "emulator", agent_cmd=str(VENV_BIN / "labgpu-agent"), boot_delay_s=0.5
    )
    yield handle
    handle.close()


@pytest.fixture
def celery_broker(redis_server):
    """Point this process's Celery app at the test broker: `.delay()` here reaches the workers."""
    from config.celery import app
    from labgpu.core.outbox import reset_broker_connections

    saved = app.conf.broker_url, dict(app.conf.broker_transport_options or {})
    app.conf.broker_url = redis_server.url
    app.conf.broker_transport_options = {"visibility_timeout": scaled_bound(300)}
    reset_broker_connections()  # all of them: a stale producer pool would keep the old broker
    yield app
    reset_broker_connections()
    app.conf.broker_url, app.conf.broker_transport_options = saved


@pytest.fixture
def lifecycle(
    live_server,
    emulator,
    celery_broker,
    redis_server,
    tmp_path,
    settings,
    monkeypatch,
    alice,
    vision_lab,
):
    """Everything a booking needs to become a node: catalog, quota, emulator, broker, API."""
    monkeypatch.setenv("LABGPU_PROVIDER_TOKEN_EMULATOR", EMULATOR_TOKEN)
    scale_lifecycle_timings(settings)  # the API's side of the lifecycle, at the workers' scale
    settings.LABGPU_PUBLIC_API_URL = live_server.url
    account = ProviderAccount.objects.create(
        name="Emulator",
        kind="emulator",
        api_base_url=emulator.url,
        token_env_var="LABGPU_PROVIDER_TOKEN_EMULATOR",
    )
    instance_type = InstanceTypeFactory(
        provider_account=account, agent_profile="mi300x", provider_size="gpu-mi300x1-192gb"
    )
    pool = NodePoolFactory(
        instance_type=instance_type,
        capacity=2,
        granularity_minutes=1,
        min_duration_minutes=1,
        provisioning_lead_minutes=0,
        teardown_grace_minutes=0,
    )
    month = month_start(now())
    for _ in range(2):
        Quota.objects.create(
            lab=vision_lab, instance_type=instance_type, month=month, gpu_hours=Decimal(100)
        )
        month = next_month(month)
    mail_dir = tmp_path / "mail"
    mail_dir.mkdir()
    env = worker_env(
        broker_url=redis_server.url,
        api_url=live_server.url,
        mail_dir=mail_dir,
        LABGPU_PROVIDER_TOKEN_EMULATOR=EMULATOR_TOKEN,
    )
    workers: list[Worker] = []
    import threading

    stopping = threading.Event()

    class Lifecycle:
        def start_worker(self, *, beat: bool = True, **extra_env: str) -> Worker:
            log = tmp_path / f"worker-{len(workers)}.log"
            worker = Worker({**env, **extra_env}, log, beat=beat).start()
            workers.append(worker)
            return worker

        def start_beat(self, **extra_env: str) -> Beat:
            log = tmp_path / f"beat-{len(workers)}.log"
            beat = Beat({**env, **extra_env}, log, beat=False).start()
            workers.append(beat)
            return beat

        def supervise(self) -> None:
            """Restart workers that exit, as compose's `restart: unless-stopped` would."""
            import threading
            import time

            def loop() -> None:
                while not stopping.is_set():
                    for index, worker in enumerate(list(workers)):
                        if (
                            worker.process
                            and worker.process.poll() is not None
                            and not (worker.killed)
                        ):
                            worker.stop()  # reaps what the dead worker left, e.g. its beat
                            workers[index] = type(worker)(
                                worker.env, worker.log_path, beat=worker.beat
                            ).start()
                    time.sleep(0.5)

            threading.Thread(target=loop, daemon=True).start()

        def mails(self) -> str:
            """Mail sent by the workers (files) and by the API process (the test outbox)."""
            from django.core import mail

            sent = [f"{m.subject}\n{m.body}" for m in getattr(mail, "outbox", [])]
            files = [path.read_text() for path in sorted(mail_dir.glob("*"))]
            return "\n".join(files + sent)

        def logs(self) -> str:
            return "\n\n".join(w.log_tail() for w in workers) + "\n\n" + emulator.log_tail()

    world = Lifecycle()
    world.env = env
    world.pool, world.account, world.emulator, world.redis = pool, account, emulator, redis_server
    world.instance_type = instance_type
    yield world
    stopping.set()
    for worker in workers:
        worker.stop()


def on_demand_body(pool, minutes: int = 30) -> dict:
    end = (now() + timedelta(minutes=minutes)).replace(second=0, microsecond=0)
    return {"pool": pool.pk, "end": end.isoformat(), "purpose": "lifecycle test"}
