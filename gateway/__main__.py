"""`python -m gateway`: read Settings, configure telemetry, serve."""

from __future__ import annotations

import logging

from aiohttp import web

from gateway.app import create_app
from gateway.auth import install_log_key
from gateway.settings import Settings
from gateway.telemetry import configure_tracing


def main() -> None:
    install_log_key()  # `key`: the caller's name
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s [%(key)s] %(message)s"
    )
    logging.getLogger("httpx2").setLevel(logging.WARNING)  # one line per model call is noise
    settings = Settings()
    if settings.sec_source == "live" or settings.search_backend == "exa":
        settings.tools_config().check()  # refuse to start without a User-Agent or key
    provider = configure_tracing()
    app = create_app(settings, tracer_provider=provider)
    print(
        f"research-gateway on http://{settings.host}:{settings.port} "
        f"(upstream: {settings.upstream_kind}, SEC: {settings.sec_source}, "
        f"search: {settings.search_backend})",
        flush=True,
    )
    try:
        web.run_app(
            app,
            host=settings.host,
            port=settings.port,
            handler_cancellation=True,
            shutdown_timeout=10,
            print=None,
        )
    finally:
        provider.shutdown()


if __name__ == "__main__":
    main()
