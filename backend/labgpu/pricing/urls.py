from django.urls import path

from labgpu.pricing import apis

urlpatterns = [
    path("prices/", apis.PriceListView.as_view(), name="prices"),
    path("prices/sync/", apis.PriceSyncView.as_view(), name="prices-sync"),
    path("prices/display-currency/", apis.DisplayCurrencyView.as_view(), name="display-currency"),
    path("instance-types/<int:pk>/prices/", apis.PriceHistoryView.as_view(), name="price-history"),
    path(
        "instance-types/<int:pk>/price-adjustment/",
        apis.PriceAdjustmentView.as_view(),
        name="price-adjustment",
    ),
]
