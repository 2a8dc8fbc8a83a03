from django.urls import path

from labgpu.usage import apis

urlpatterns = [
    path("usage/", apis.UsageView.as_view(), name="usage"),
    path("usage/storage/", apis.StorageUsageView.as_view(), name="usage-storage"),
]
