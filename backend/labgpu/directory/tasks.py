import logging

from celery import shared_task

from labgpu.core.outbox import publish_best_effort
from labgpu.directory import services
from labgpu.directory.ldap_client import DirectoryUnavailable, ldap_configured

logger = logging.getLogger(__name__)


@shared_task(acks_late=True)
def resync_directory_accounts() -> int:
    """Beat: refresh one bounded batch of LDAP users (groups → memberships; gone → deactivated);
    re-enqueue while more are due. A directory outage ends the run until the next beat."""
    if not ldap_configured():
        return 0
    try:
        result = services.directory_resync_batch()
    except DirectoryUnavailable:
        logger.warning("directory sync stopped: the LDAP server did not answer")
        return 0
    if result.more:
        publish_best_effort("labgpu.directory.tasks.resync_directory_accounts")
    return len(result.seen) + len(result.gone)
