import factory

from labgpu.accounts.models import Lab, Membership, User


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = User
        django_get_or_create = ["username"]

    username = factory.Sequence(lambda n: f"user{n}")
    email = factory.LazyAttribute(lambda u: f"{u.username}@example.org")
    verified_email = factory.SelfAttribute("email")  # personas' addresses are their own
    password = factory.django.Password("correct horse battery staple")
    timezone = "UTC"


class LabFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Lab
        django_get_or_create = ["slug"]

    name = factory.Sequence(lambda n: f"Lab {n}")
    slug = factory.Sequence(lambda n: f"lab-{n}")


class MembershipFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Membership

    user = factory.SubFactory(UserFactory)
    lab = factory.SubFactory(LabFactory)
    role = Membership.Role.MEMBER
