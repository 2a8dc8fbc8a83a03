# gunicorn reads this file from its working directory (backend/ for `make run`, /app in the image),
# whatever else its command line says. See labgpu/ops/gunicorn.py.
from labgpu.ops.gunicorn import install_json_error_pages

logger_class = "labgpu.ops.gunicorn.RedactingLogger"
install_json_error_pages()
