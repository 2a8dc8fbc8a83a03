"""labgpu: the LabGPU command line. It talks to the REST API only (backend/openapi.yaml)."""

__version__ = "0.1.0"
