"""`python -m bench`: the gateway against the floor, on loopback, written to BENCH.md.

Processes: a lean fake Anthropic upstream (`bench.upstream`), the system under test (the
gateway via `bench.serve`, or a reference relay via `bench.relays`), and a load client
(`bench.load`), each its own process. Systems under test run on one core; upstream, load
client and this orchestrator on another (`bench.procs`).
"""
