"""The demo model as the Models API describes a model (`GET /v1/models/{model_id}`).

A client that shapes its requests by the model's record (thinking form, effort, the
`max_tokens` cap, structured outputs) reads the truth about the demo here: it streams a
thinking block for `enabled` and `adaptive` thinking, takes an effort of low, medium or
high, and has no structured outputs, citations, server tools, images or PDFs.
"""

from __future__ import annotations

from typing import Any

__all__ = ["DEMO_MODEL", "model_card", "not_found"]

DEMO_MODEL = "demo"
"""The demo's model id: what `GET /v1/models/demo` describes and every message names."""


def _support(supported: bool) -> dict[str, bool]:
    return {"supported": supported}


def model_card() -> dict[str, Any]:
    """The `ModelInfo` of the demo model, every capability key present."""
    no = _support(False)
    return {
        "type": "model",
        "id": DEMO_MODEL,
        "display_name": "Demo research model (offline)",
        "created_at": "2026-01-01T00:00:00Z",
        "lifecycle": "active",
        "deprecated_at": None,
        "retires_at": None,
        "line": None,
        "max_input_tokens": 200_000,
        "max_tokens": 64_000,
        "capabilities": {
            "batch": no,
            "citations": no,
            "code_execution": no,
            "context_management": {
                "supported": False,
                "clear_thinking_20251015": no,
                "clear_tool_uses_20250919": no,
                "compact_20260112": no,
            },
            "effort": {
                "supported": True,
                "low": _support(True),
                "medium": _support(True),
                "high": _support(True),
                "max": no,
                "xhigh": no,
            },
            "image_input": no,
            "pdf_input": no,
            "server_tools": {"supported": False, "code_execution": no, "web_search": no},
            "structured_outputs": no,
            "thinking": {
                "supported": True,
                "types": {
                    "adaptive": _support(True),
                    "enabled": _support(True),
                    "disabled": _support(True),
                    "between_tools": no,
                },
            },
        },
    }


def not_found(model_id: str) -> dict[str, Any]:
    """The API's answer for a model id it does not know."""
    return {"type": "error", "error": {"type": "not_found_error", "message": f"model: {model_id}"}}
