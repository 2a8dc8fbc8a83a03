from labgpu.catalog.models import ProviderAccount
from labgpu.providers import ProviderDriver, driver_from_settings


def driver_for(account: ProviderAccount) -> ProviderDriver:
    """The driver for a provider account; its token comes from the named environment variable."""
    return driver_from_settings(
        kind=account.kind, base_url=account.api_base_url, credential_env=account.token_env_var
    )
