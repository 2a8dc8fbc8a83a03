"""Volume rows the database keeps straight, and the lab volume-size PUT under hostile input."""

import pytest
from django.db import IntegrityError, transaction

from labgpu.catalog.tests.factories import ProviderAccountFactory
from labgpu.provisioning.models import Volume

pytestmark = pytest.mark.django_db


def row(owner, name: str, *, provider_id: str, account, state: str = "available") -> Volume:
    return Volume.objects.create(
        owner_user=owner,
        provider_account=account,
        region=name.rsplit("-", 1)[-1],
        name=name,
        size_gb=100,
        provider_id=provider_id,
        state=state,
    )


def test_the_database_refuses_two_rows_for_one_provider_volume(alice, bob):
    account = ProviderAccountFactory()
    row(alice, "labgpu-u1-tor1", provider_id="vol-1", account=account)

    with pytest.raises(IntegrityError), transaction.atomic():
        row(bob, "labgpu-u2-tor1", provider_id="vol-1", account=account)
    with pytest.raises(IntegrityError), transaction.atomic():  # a deleted row keeps its id too
        row(bob, "labgpu-u2-ams3", provider_id="vol-1", account=account, state="deleted")

    # rows not yet created at the provider have no id: any number may wait at once
    row(alice, "labgpu-u1-nyc2", provider_id="", account=account)
    row(bob, "labgpu-u2-nyc2", provider_id="", account=account)
    # ids are the provider account's: another account may have the same one
    row(bob, "labgpu-u2-tor1", provider_id="vol-1", account=ProviderAccountFactory(name="DO"))
    assert Volume.objects.filter(provider_id="vol-1").count() == 2
