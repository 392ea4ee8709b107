"""What a run start asks of its key, besides the counters: the limits and dollar budgets
that apply to it (its own over the configured ones), that it may run the model, and that
a dollar budget never meets a model without a price (it would be charged $0)."""

from __future__ import annotations

from gateway.access.spend import Budgets
from gateway.access.tenants import Tenant
from gateway.errors import GatewayError, ValidationFailed
from gateway.pricing import PriceTable
from gateway.settings import Settings
from gateway.store.counters import Limits


def configured_limits(settings: Settings) -> Limits:
    return Limits(
        per_minute=settings.gateway_rate_limit_per_min,
        concurrent=settings.gateway_max_concurrent_runs,
        daily_tokens=settings.gateway_daily_token_budget,
    )


def limits_for(tenant: Tenant | None, default: Limits) -> Limits:
    """The key's own limits where it has them, else the configured ones."""
    own = tenant.limits if tenant is not None else {}
    if not own:
        return default
    return Limits(
        per_minute=int(own.get("runs_per_minute", default.per_minute)),
        concurrent=int(own.get("concurrent_runs", default.concurrent)),
        daily_tokens=int(own.get("daily_tokens", default.daily_tokens)),
    )


def budgets_for(tenant: Tenant | None, settings: Settings) -> Budgets:
    own = tenant.limits if tenant is not None else {}
    daily = own.get("daily_usd", settings.gateway_daily_usd_budget)
    return Budgets(daily_usd=float(daily), monthly_usd=float(own.get("monthly_usd", 0.0)))


def check_model(tenant: Tenant | None, model: str) -> None:
    """403 `PERMISSION_ERROR` (`details.reason` `model`) for a model the key may not run."""
    if tenant is None or tenant.models is None or model in tenant.models:
        return
    raise GatewayError(
        "PERMISSION_ERROR",
        f"Key {tenant.name!r} may not run model {model!r} (allowed: {', '.join(tenant.models)})",
        {"reason": "model", "model": model, "allowed": list(tenant.models)},
    )


def check_priced(model: str, budgets: Budgets, prices: PriceTable) -> None:
    """A dollar budget needs the model's price: without it the run is refused."""
    if budgets.active and prices.price(model) is None:
        raise ValidationFailed(
            f"Model {model!r} has no price, and a USD budget applies to this key: add the "
            "model's price to the table GATEWAY_PRICES_FILE names (the shape of "
            "gateway/prices.json)",
            {"reason": "unpriced_model", "model": model},
        )


def check_startup(settings: Settings, prices: PriceTable) -> None:
    """Refuse to start when a global dollar budget meets an unpriced configured model."""
    if settings.gateway_daily_usd_budget and prices.price(settings.model) is None:
        raise ValueError(
            f"GATEWAY_DAILY_USD_BUDGET is set but model {settings.model} has no price: add "
            "it to GATEWAY_PRICES_FILE, or its runs could not be held to the budget"
        )
