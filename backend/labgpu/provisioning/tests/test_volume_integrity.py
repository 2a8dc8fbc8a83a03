"""Volume rows the database keeps straight, and the lab volume-size PUT under hostile input."""

import pytest
from django.db import IntegrityError, transaction

from conftest import client_for
from labgpu.catalog.tests.factories import ProviderAccountFactory
from labgpu.provisioning.models import LabVolumeSize, Volume

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


URL = "/api/v1/volumes/lab-size/{}/"


@pytest.mark.parametrize(
    "body",
    [
        {"size_gb": "lots"},
        {"size_gb": -5},
        {"size_gb": 0},
        {"size_gb": 12.5},
        {"size_gb": True},
        {"size_gb": None},
        {"size_gb": [100]},
        {"size_gb": {"gb": 100}},
        {"size_gb": "9" * 5000},
        {"size_gb": 10**40},
        {"size_gb": 501},  # over the site's limit
        {},
    ],
)
def test_hostile_lab_volume_size_is_a_400_naming_the_field_and_writes_nothing(
    bob, vision_lab, settings, body
):
    settings.LABGPU_VOLUME_MAX_GB = 500
    response = client_for(bob).put(URL.format(vision_lab.pk), body, format="json")
    assert response.status_code == 400, response.content
    assert "size_gb" in response.json()["extra"]["fields"]
    assert not LabVolumeSize.objects.exists()


def test_a_lab_volume_size_body_that_is_not_json_is_a_json_400(bob, vision_lab):
    response = client_for(bob).put(
        URL.format(vision_lab.pk), "{size_gb: 5", content_type="application/json"
    )
    assert response.status_code == 400
    assert response.json()["code"]
    assert not LabVolumeSize.objects.exists()


def test_lab_volume_size_of_another_lab_or_by_a_researcher_is_a_404_and_writes_nothing(
    alice, bob, mallory, vision_lab, other_lab
):
    cases = [
        (bob, other_lab.pk),  # a lab admin, but of another lab
        (mallory, vision_lab.pk),  # from another lab
        (alice, vision_lab.pk),  # a researcher of the lab
        (bob, 999_999),  # no such lab
    ]
    for person, lab_id in cases:
        response = client_for(person).put(URL.format(lab_id), {"size_gb": 200}, format="json")
        assert response.status_code == 404, (person.username, lab_id)
        assert response.json()["code"] == "not_found"
    not_a_number = client_for(bob).put("/api/v1/volumes/lab-size/abc/", {"size_gb": 200})
    assert not_a_number.status_code == 404 and not_a_number.json()["code"]
    assert not LabVolumeSize.objects.exists()
