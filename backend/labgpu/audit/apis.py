import django_filters
from django.db.models import QuerySet
from rest_framework import viewsets

from labgpu.accounts.selectors import admin_lab_ids_of
from labgpu.audit.models import AuditEvent
from labgpu.audit.serializers import AuditEventSerializer


class CharInFilter(django_filters.BaseInFilter, django_filters.CharFilter):
    pass


class AuditEventFilter(django_filters.FilterSet):
    # `?action=booking.approve,booking.reject`: one page of several kinds of entry (decisions).
    action = CharInFilter(field_name="action", label="One action, or several separated by commas")

    class Meta:
        model = AuditEvent
        fields = ["action", "target_type", "target_id", "lab"]


class AuditEventViewSet(viewsets.ReadOnlyModelViewSet):
    """The audit log: site admins see everything, lab admins their labs' entries."""

    queryset = AuditEvent.objects.none()
    serializer_class = AuditEventSerializer
    filterset_class = AuditEventFilter

    def get_queryset(self) -> QuerySet[AuditEvent]:
        events = AuditEvent.objects.select_related("actor")
        if self.request.user.is_site_admin:
            return events
        return events.filter(lab_id__in=admin_lab_ids_of(self.request.user))
