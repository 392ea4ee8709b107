"""`GET /v1/models/{id}`: the demo model's own record, as the Models API writes one."""

from __future__ import annotations

from aiohttp import web

MODEL_ID = "demo"


def _yes(supported: bool = True) -> dict[str, bool]:
    return {"supported": supported}


MODEL_INFO = {
    "type": "model",
    "id": MODEL_ID,
    "display_name": "Demo research model (offline)",
    "created_at": "2026-01-01T00:00:00Z",
    "lifecycle": "active",
    "deprecated_at": None,
    "retires_at": None,
    "max_input_tokens": 200_000,
    "max_tokens": 64_000,
    "capabilities": {
        "batch": _yes(False),
        "citations": _yes(False),
        "code_execution": _yes(False),
        "context_management": {"supported": False},
        "effort": {
            "supported": True, "low": _yes(), "medium": _yes(), "high": _yes(), "max": _yes(False),
        },
        "image_input": _yes(False),
        "pdf_input": _yes(False),
        "server_tools": {
            "supported": False, "code_execution": _yes(False), "web_search": _yes(False),
        },
        "structured_outputs": _yes(False),
        "thinking": {
            "supported": True,
            "types": {
                "adaptive": _yes(), "enabled": _yes(), "disabled": _yes(),
                "between_tools": _yes(False),
            },
        },
    },
}  # fmt: skip


async def retrieve(request: web.Request) -> web.Response:
    model_id = request.match_info["model_id"]
    if model_id != MODEL_ID:
        error = {"type": "not_found_error", "message": f"model: {model_id}"}
        return web.json_response({"type": "error", "error": error}, status=404)
    return web.json_response(MODEL_INFO)
