"""`python -m bench.serve [--read-path raw|helper] --upstream URL`: the gateway as
`python -m gateway` runs it (same app factory and tracing setup, INFO logging,
`handler_cancellation=True`), pointed at the bench upstream, with the bench tools and the
probe. Prints `READY <port>`.

`--read-path helper` swaps in the SDK's stream helper (`bench.helper_model`) for the
gateway's own raw-bytes read path; nothing else changes.
"""

from __future__ import annotations

import argparse
import cProfile
from typing import Any

from bench import probe
from bench.benchtools import bench_registry
from bench.common import event_loop, raise_nofile


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--upstream", required=True)
    parser.add_argument("--read-path", choices=("raw", "helper"), default="raw")
    parser.add_argument(
        "--upstream-kind", choices=("anthropic", "openai"), default="anthropic",
        help="the upstream's API: Messages, or Chat Completions (at URL/v1)",
    )  # fmt: skip
    parser.add_argument("--redis", metavar="URL", help="share run state through this Redis")
    parser.add_argument("--takeover-s", type=float, default=10.0, help="GATEWAY_TAKEOVER_S")
    parser.add_argument("--retention-s", type=float, help="GATEWAY_RUN_TTL_S and _SESSION_TTL_S")
    parser.add_argument("--port", type=int, default=0, help="listen here (0: any free port)")
    parser.add_argument(
        "--reuse-port", action="store_true", help="SO_REUSEPORT: workers share one port"
    )
    parser.add_argument(
        "--event-loop",
        choices=("auto", "uvloop", "asyncio"),
        default=event_loop(),
        help="GATEWAY_EVENT_LOOP (default: BENCH_EVENT_LOOP, else auto)",
    )
    parser.add_argument(
        "--max-runs", type=int, default=0, help="GATEWAY_MAX_RUNS_PER_PROCESS (0: no cap)"
    )
    parser.add_argument("--profile", metavar="PATH", help="write cProfile stats here at exit")
    args = parser.parse_args()
    raise_nofile()
    from gateway.http.logs import configure_logging

    configure_logging()  # as `python -m gateway` does

    import gateway.providers.configured
    from gateway.http import serving
    from gateway.http.app import create_app
    from gateway.ops.eventloop import new_loop
    from gateway.ops.telemetry import configure_tracing
    from gateway.runs.tools import StaticToolset
    from gateway.settings import Settings

    if args.read_path == "helper":
        from bench.helper_model import HelperProvider

        # The one swap: the upstreams are opened with this module-level name.
        vars(gateway.providers.configured)["AnthropicProvider"] = HelperProvider
    settings = Settings(
        _env_file=None,
        gateway_upstream=args.upstream_kind,
        openai_base_url=f"{args.upstream}/v1",
        openai_api_key="bench",
        openai_model="bench-chat",
        anthropic_api_key="bench",
        anthropic_base_url=args.upstream,
        sdk_model="claude-bench",
        **_retention(args.retention_s),
        redis_url=args.redis,
        gateway_takeover_s=args.takeover_s,
        gateway_event_loop=args.event_loop,
        gateway_max_runs_per_process=args.max_runs,
    )
    # As `python -m gateway` does; the environment has no OTEL_* here, so nothing is exported.
    provider = configure_tracing()
    app = create_app(settings, toolset=StaticToolset(bench_registry()), tracer_provider=provider)
    probe.install(app)
    # As `python -m gateway` listens; connections made before the app starts wait there.
    sock = serving.listening_socket("127.0.0.1", args.port, reuse_port=args.reuse_port)
    print(f"READY {sock.getsockname()[1]}", flush=True)
    loop = new_loop(settings.gateway_event_loop)
    profiler = cProfile.Profile() if args.profile else None
    if profiler is not None:
        profiler.enable()
    try:
        serving.run(app, sock, loop, shutdown_timeout=5)
    finally:
        if profiler is not None:
            profiler.disable()
            profiler.dump_stats(args.profile)


def _retention(seconds: float | None) -> dict[str, Any]:
    if seconds is None:
        return {}
    return {"gateway_run_ttl_s": seconds, "gateway_session_ttl_s": seconds}


if __name__ == "__main__":
    main()
