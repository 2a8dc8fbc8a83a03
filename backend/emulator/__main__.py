"""`python -m emulator`: serve the DigitalOcean emulator with uvicorn."""

from __future__ import annotations

import logging
import sys

import uvicorn

from .app import create_app
from .settings import parse_args


def main(argv: list[str] | None = None) -> None:
    settings = parse_args(argv)
    logging.basicConfig(
        level=settings.log_level.upper(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    uvicorn.run(
        create_app(settings),
        host=settings.host,
        port=settings.port,
        log_level=settings.log_level,
        access_log=settings.log_level == "debug",
        # SIGTERM/SIGINT run the lifespan shutdown, which stops the agents and saves the state
        timeout_graceful_shutdown=5,
    )


if __name__ == "__main__":
    main()
