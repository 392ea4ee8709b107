"""`python -m gateway [--workers N]`: read Settings, configure telemetry, serve (or start N
workers that serve one port, see `supervisor`)."""

from __future__ import annotations

import argparse
import logging
import sys

from aiohttp import web

from gateway.app import create_app
from gateway.auth import install_log_key
from gateway.eventloop import loop_name, new_loop
from gateway.settings import Settings
from gateway.telemetry import configure_tracing


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m gateway", description=__doc__)
    parser.add_argument("--workers", type=int, help="worker processes (GATEWAY_WORKERS)")
    # Set by the supervisor for each worker it starts:
    parser.add_argument("--worker", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--supervisor", type=int, help=argparse.SUPPRESS)
    return parser.parse_args()


def main() -> None:
    install_log_key()  # `key`: the caller's name
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s [%(key)s] %(message)s"
    )
    logging.getLogger("httpx2").setLevel(logging.WARNING)  # one line per model call is noise
    args = parse_args()
    settings = Settings()
    if args.worker is not None:
        settings = settings.model_copy(update={"gateway_worker_index": args.worker})
    if args.supervisor is not None:
        from gateway.supervisor import die_with_supervisor

        die_with_supervisor(args.supervisor)
    workers = args.workers or settings.gateway_workers
    if args.worker is None and workers > 1:
        if not settings.redis_url:
            sys.exit(
                f"GATEWAY_WORKERS={workers} needs REDIS_URL: workers share runs, sessions and "
                "the SEC budget through Redis (set REDIS_URL, or run one worker)"
            )
        from gateway.supervisor import supervise

        print(f"research-gateway: {workers} workers on http://{settings.host}:{settings.port}")
        sys.exit(supervise(workers))
    serve(settings, reuse_port=args.worker is not None)


LISTEN_BACKLOG = 1024
"""Connections the kernel holds for the loop to accept (aiohttp's default is 128). Past
it, a new connection's handshake is dropped and the client waits for a retransmission
(1 s, then 3 s, 7 s): a burst of stream starts (bench case 2 at 1,500 streams) overflowed
128 whenever the loop was busy for a moment. The kernel caps it at `net.core.somaxconn`."""


def serve(settings: Settings, *, reuse_port: bool) -> None:
    if settings.sec_source == "live" or settings.search_backend == "exa":
        settings.tools_config().check()  # refuse to start without a User-Agent or key
    provider = configure_tracing()
    app = create_app(settings, tracer_provider=provider)
    loop = new_loop(settings.gateway_event_loop)
    print(
        f"research-gateway on http://{settings.host}:{settings.port} "
        f"(upstream: {settings.upstream_kind}, SEC: {settings.sec_source}, "
        f"search: {settings.search_backend}, loop: {loop_name(loop)})",
        flush=True,
    )
    try:
        web.run_app(
            app,
            host=settings.host,
            port=settings.port,
            handler_cancellation=True,
            backlog=LISTEN_BACKLOG,
            shutdown_timeout=10,
            reuse_port=reuse_port or None,
            print=None,
            loop=loop,
        )
    finally:
        provider.shutdown()


if __name__ == "__main__":
    main()
