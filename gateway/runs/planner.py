"""Per-run wiring: a validated request plus the model record become the run's LoopConfig.

Async because the model record may need a trip to the Models API (once per model);
everything a model cannot do is refused here, before any SSE header.
"""

from __future__ import annotations

from collections.abc import Hashable

from gateway.errors import ValidationFailed
from gateway.providers.anthropic.catalog import ModelCatalog, ModelRecord, StaticCatalog
from gateway.providers.anthropic.request import ContextChoice, ThinkingChoice, plan_run
from gateway.providers.plan import CallPlan, today_text
from gateway.providers.seam import RetryPolicy
from gateway.runs.loop import LoopConfig
from gateway.runs.run import RunRequest
from gateway.settings import Settings

SYSTEM_PROMPT = """You are a financial research assistant. You answer questions about public \
companies from SEC EDGAR filings and, when useful, the web, using the tools you are given. \
Look things up rather than relying on memory; read the relevant filing section before \
summarising it. In the answer, give figures with their units and periods, and cite the \
filings you used (form, filing date, accession number or link). If the tools find nothing \
or fail, say so plainly. Each message of tool results ends with a note of how many tool \
rounds you have left: plan your lookups to fit, and answer when none are left."""
MAX_PLANS = 64
"""Distinct cached plans per model record (a thinking budget is any number: bounded)."""


class RunPlanner:
    """Makes each run's LoopConfig from the settings, the request and the model record."""

    def __init__(self, settings: Settings, catalog: ModelCatalog | StaticCatalog) -> None:
        self.settings = settings
        self.catalog = catalog
        self.retry = RetryPolicy(
            max_retries=settings.gateway_upstream_max_retries,
            max_total_wait_s=settings.gateway_upstream_max_retry_wait_s,
            call_deadline_s=settings.gateway_upstream_deadline_s,
        )
        self.system = settings.sdk_system_prompt or SYSTEM_PROMPT
        self.context = ContextChoice(
            settings.gateway_context,
            settings.gateway_context_trigger_tokens,
            settings.gateway_context_keep_tool_uses,
        )
        self._record: ModelRecord | None = None
        self._plans: dict[Hashable, CallPlan] = {}
        """The plans made for `_record`, by the request's choices: most runs ask the same."""

    async def record(self) -> ModelRecord:
        return await self.catalog.get(self.settings.model)

    async def config(self, request: RunRequest) -> LoopConfig:
        settings = self.settings
        if request.code_execution:
            self._check_code_execution()
        return LoopConfig(
            plan=await self._plan(request),
            max_turns=request.max_turns or settings.sdk_max_turns,
            system=self.system,
            date=today_text(),  # read per run (a microsecond), so a test can move the day
            allowed_tools=request.tools,
            retry=self.retry,
        )

    async def _plan(self, request: RunRequest) -> CallPlan:
        """The run's plan: made once per model record and set of choices, then shared (a
        plan is read only). Runs with an output format or code execution are planned
        each time: their plans hold the request's own schema and skills."""
        record = await self.record()
        if record is not self._record or len(self._plans) >= MAX_PLANS:
            self._record, self._plans = record, {}
        if request.output_format is not None or request.code_execution:
            return self._make_plan(record, request)
        key = (request.thinking, request.effort, request.parallel_tools)
        plan = self._plans.get(key)
        if plan is None:
            plan = self._plans[key] = self._make_plan(record, request)
        return plan

    def _make_plan(self, record: ModelRecord, request: RunRequest) -> CallPlan:
        settings = self.settings
        return plan_run(
            record,
            max_tokens=settings.sdk_max_tokens,
            thinking=self._thinking(request),
            effort=request.effort or settings.sdk_effort,
            effort_explicit=request.effort is not None,
            output_format=request.output_format,
            server_tools=settings.server_tools,
            cache=settings.gateway_prompt_cache,
            context=self.context,
            parallel_tools=request.parallel_tools,
            code_execution=request.code_execution,
            skills=request.skills,
        )

    def _check_code_execution(self) -> None:
        """Code execution only where the operator allows it and the upstream runs it."""
        if not self.settings.gateway_code_execution:
            raise ValidationFailed(
                "code_execution and skills are off here (GATEWAY_CODE_EXECUTION=false)",
                {"field": "code_execution"},
            )
        upstream = self.settings.upstream_kind
        if upstream != "anthropic":
            raise ValidationFailed(
                f"code_execution and skills need the Messages API; this gateway's upstream "
                f"is {upstream}",
                {"field": "code_execution", "upstream": upstream},
            )

    def _thinking(self, request: RunRequest) -> ThinkingChoice:
        budget = self.settings.sdk_thinking_budget
        choice = request.thinking
        if choice is None:  # the operator's default: a budget > 0 means thinking on
            return budget if budget else self.settings.sdk_thinking
        if choice == "on" and budget:
            return budget  # the operator's budget, for models that take one
        return choice
