"""The beat's schedule file (labgpu.core.beat.LeaderScheduler)."""

import os
import signal
import subprocess
import sys
import textwrap

from django.conf import settings

from labgpu.core.beat import LeaderScheduler

SQLITE_HEADER = b"SQLite format 3\x00"


def schedule_files(directory):
    return {path.name: path.read_bytes()[:16] for path in directory.iterdir()}


def test_the_schedule_is_a_plain_file_store_not_sqlite(tmp_path):
    """Python 3.13's shelve writes SQLite (WAL): a beat restarted after its predecessor was
    SIGKILLed died on its first read with "locking protocol". The schedule is dbm.dumb's files."""
    from config.celery import app

    scheduler = LeaderScheduler(app=app, schedule_filename=str(tmp_path / "schedule"))
    scheduler.sync()
    files = schedule_files(tmp_path)
    assert {"schedule.dat", "schedule.dir"} <= set(files), files
    assert not [name for name, head in files.items() if head == SQLITE_HEADER], files
    scheduler.close()


def test_a_beat_killed_mid_run_leaves_a_schedule_the_next_one_reads(tmp_path):
    """SIGKILL (no close, no sync at exit), then a new scheduler on the same file keeps the
    entries' last runs: nothing is lost and nothing refuses to open."""
    path = tmp_path / "schedule"
    script = textwrap.dedent(
        f"""
        import os, signal, django
        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
        django.setup()
        from config.celery import app
        from labgpu.core.beat import LeaderScheduler
        scheduler = LeaderScheduler(app=app, schedule_filename={str(path)!r})
        entry = scheduler.schedule["end-due-bookings"]
        scheduler.schedule["end-due-bookings"] = entry._next_instance()
        scheduler.sync()
        os.kill(os.getpid(), signal.SIGKILL)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=settings.BASE_DIR,
        env={**os.environ, "PYTHONPATH": str(settings.BASE_DIR)},
        timeout=60,
    )
    assert done.returncode == -signal.SIGKILL
    from config.celery import app

    scheduler = LeaderScheduler(app=app, schedule_filename=str(path))
    assert scheduler.schedule["end-due-bookings"].total_run_count == 1
    assert set(settings.CELERY_BEAT_SCHEDULE) <= set(scheduler.schedule)
    scheduler.close()
