from django.urls import path

from labgpu.statements import apis

urlpatterns = [
    path("labs/<int:lab_pk>/statement/", apis.StatementView.as_view(), name="lab-statement"),
    path(
        "labs/<int:lab_pk>/statement/pdf/",
        apis.StatementPdfView.as_view(),
        name="lab-statement-pdf",
    ),
    path(
        "labs/<int:lab_pk>/statement/html/",
        apis.StatementHtmlView.as_view(),
        name="lab-statement-html",
    ),
]
