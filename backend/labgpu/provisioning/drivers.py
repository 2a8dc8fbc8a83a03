from django.conf import settings

from labgpu.catalog.models import ProviderAccount
from labgpu.providers import ProviderDriver, driver_from_settings
from labgpu.providers.metrics import provider_transport


def driver_for(account: ProviderAccount) -> ProviderDriver:
    """The driver for a provider account; its token comes from the named environment variable.

    Inside a task the driver retries only briefly: longer waits become a Celery retry with the
    provider's retry-after as countdown, so no call outlives the node's provider lease.
    """
    return driver_from_settings(
        kind=account.kind,
        base_url=account.api_base_url,
        credential_env=account.token_env_var,
        max_attempts=settings.LABGPU_PROVIDER_MAX_ATTEMPTS,
        max_retry_wait_s=settings.LABGPU_PROVIDER_MAX_RETRY_WAIT_S,
        backoff_base_s=settings.LABGPU_PROVIDER_BACKOFF_BASE_S,
        backoff_max_s=settings.LABGPU_PROVIDER_BACKOFF_MAX_S,
        transport=provider_transport(),  # counts requests and errors for /metrics
    )
