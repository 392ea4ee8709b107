"""Each run's loop dependencies: the upstreams in fallback order, the tools, and an
observer that writes the run's spans, metrics and audit lines."""

from __future__ import annotations

from dataclasses import dataclass, field

from opentelemetry.context import Context
from opentelemetry.trace import Tracer

from gateway import pricing
from gateway.ops.audit import AuditLog, RunAudit
from gateway.ops.metrics import Metrics
from gateway.ops.observe import RunObserver
from gateway.providers.configured import Upstreams
from gateway.runs.files import RunFiles
from gateway.runs.loop import LoopDeps
from gateway.runs.run import Run, RunRequest
from gateway.runs.tools import ToolsetLike
from gateway.settings import Settings
from gateway.store.files import FileOwners


@dataclass(frozen=True)
class RunWiring:
    """What every run of this process shares; calling it gives one run's `LoopDeps`."""

    settings: Settings
    tracer: Tracer
    metrics: Metrics
    toolset: ToolsetLike
    upstreams: Upstreams
    audit: AuditLog | None
    """The audit log, when it is on."""
    prices: pricing.PriceTable = field(default_factory=pricing.shipped)
    files: FileOwners | None = None
    """Who owns code execution's files (runs that ask for code execution record theirs)."""

    def __call__(
        self, run: Run, request: RunRequest, endpoint: str, parent: Context | None
    ) -> LoopDeps:
        settings, toolset, upstreams = self.settings, self.toolset, self.upstreams
        registry = toolset.registry.snapshot()  # MCP servers' tools may come and go meanwhile
        observer = RunObserver(
            tracer=self.tracer,
            metrics=self.metrics,
            run_id=run.id,
            session_id=run.session_id,
            endpoint=endpoint,
            model=settings.model,
            tool_names=registry,  # a snapshot: its names do not change (no copy a run)
            tool_sources=registry.sources(),
            parent=parent,
            trace_content=settings.gateway_trace_content,
            upstream=upstreams.providers[0].name,
            on_upstream_result=upstreams.health.record,
            caller=request.caller,
            audit=None
            if self.audit is None
            else RunAudit(self.audit, run.owner, run.id, run.session_id),
        )
        files = None
        if request.code_execution and upstreams.files is not None and self.files is not None:
            files = RunFiles(upstreams.files, self.files, run.owner, run.id)
        check = settings.gateway_figure_check == "annotate"
        return LoopDeps(
            upstreams.providers, registry, observer, toolset.services, self.prices, files, check
        )
