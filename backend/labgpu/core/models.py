from django.db import models


class BaseModel(models.Model):
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        abstract = True


class OutboxMessage(models.Model):
    """A task to publish to the broker; written in the transaction that asks for the work."""

    task = models.CharField(max_length=200)
    args = models.JSONField(default=list)
    not_before = models.DateTimeField()
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    def __str__(self) -> str:
        return f"{self.task}{tuple(self.args)}"
