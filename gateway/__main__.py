"""`python -m gateway [--workers N]`: read Settings, configure telemetry, serve (or start N
workers that serve one port, see `supervisor`)."""

from __future__ import annotations

import argparse
import sys

from gateway.http import serving
from gateway.http.app import create_app
from gateway.http.guard import unauthenticated_exposure
from gateway.http.logs import configure_logging
from gateway.http.serving import listening_socket
from gateway.ops.eventloop import loop_name, new_loop
from gateway.ops.fleet import report_failure
from gateway.ops.telemetry import configure_tracing
from gateway.settings import Settings


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m gateway", description=__doc__)
    parser.add_argument("--workers", type=int, help="worker processes (GATEWAY_WORKERS)")
    # Set by the supervisor for each worker it starts:
    parser.add_argument("--worker", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--supervisor", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--fleet-member", help=argparse.SUPPRESS)
    return parser.parse_args()


def main() -> None:
    configure_logging()
    args = parse_args()
    settings = Settings()
    if args.worker is not None:
        settings = settings.model_copy(
            update={"gateway_worker_index": args.worker, "gateway_fleet_member": args.fleet_member}
        )
    if args.supervisor is not None:
        from gateway.ops.supervisor import die_with_supervisor

        die_with_supervisor(args.supervisor)
    exposure = unauthenticated_exposure(settings)
    if exposure is not None:
        sys.exit(f"research-gateway will not start: {exposure}")
    workers = args.workers or settings.gateway_workers
    if args.worker is None and workers > 1:
        if not settings.redis_url:
            sys.exit(
                f"GATEWAY_WORKERS={workers} needs REDIS_URL: workers share runs, sessions and "
                "the SEC budget through Redis (set REDIS_URL, or run one worker)"
            )
        from gateway.ops.supervisor import supervise

        print(f"research-gateway: {workers} workers on http://{settings.host}:{settings.port}")
        sys.exit(supervise(workers, boot_failures=settings.gateway_worker_boot_failures))
    with report_failure(settings.gateway_fleet_member):  # for the supervisor's log
        serve(settings, reuse_port=args.worker is not None)


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
    sock = listening_socket(settings.host, settings.port, reuse_port=reuse_port)
    try:
        serving.run(app, sock, loop, shutdown_timeout=settings.gateway_shutdown_timeout_s)
    finally:
        provider.shutdown()


if __name__ == "__main__":
    main()
