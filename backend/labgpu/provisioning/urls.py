from django.urls import path
from rest_framework.routers import SimpleRouter

from labgpu.provisioning import apis

router = SimpleRouter()
router.register("nodes", apis.NodeViewSet, basename="node")

urlpatterns = [
    *router.urls,
    path("pool-ready-times/", apis.PoolReadyTimesApi.as_view(), name="pool-ready-times"),
    path("volumes/", apis.VolumeListApi.as_view(), name="volume-list"),
    path("volumes/untracked/", apis.UntrackedVolumeListApi.as_view(), name="volume-untracked"),
    path("volumes/lab-size/<int:lab_id>/", apis.LabVolumeSizeApi.as_view(), name="volume-lab-size"),
    path("volumes/<int:pk>/", apis.VolumeDetailApi.as_view(), name="volume-detail"),
    path("volumes/<int:pk>/resize/", apis.VolumeResizeApi.as_view(), name="volume-resize"),
]
