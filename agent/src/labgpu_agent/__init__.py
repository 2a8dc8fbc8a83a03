"""LabGPU node agent: checks that a booked GPU node is what was paid for, healthy and fast."""

__version__ = "0.1.0"

from labgpu_agent.report import ReportValidationError, validate_report

__all__ = ["ReportValidationError", "__version__", "validate_report"]
