from django.urls import path

from labgpu.health import apis

urlpatterns = [
    path("agent/bootstrap/", apis.AgentBootstrapView.as_view(), name="agent-bootstrap"),
    path("agent/reports/", apis.AgentReportView.as_view(), name="agent-reports"),
    path("agent/heartbeat/", apis.AgentHeartbeatView.as_view(), name="agent-heartbeat"),
    path(
        "bookings/<int:pk>/utilisation/",
        apis.BookingUtilisationView.as_view(),
        name="booking-utilisation",
    ),
    path("bookings/<int:pk>/keep/", apis.BookingKeepView.as_view(), name="booking-keep"),
    path("agent/notebook/", apis.AgentNotebookView.as_view(), name="agent-notebook"),
    path("nodes/<int:pk>/health/", apis.NodeHealthView.as_view(), name="node-health"),
    path("nodes/<int:pk>/deep-check/", apis.NodeDeepCheckView.as_view(), name="node-deep-check"),
    path(
        "instance-types/<int:pk>/health/",
        apis.InstanceTypeHealthView.as_view(),
        name="instance-type-health",
    ),
]
