"""research-gateway: the Anthropic tool-use loop over SEC filings and the web, as SSE."""

from gateway import native

__version__ = "0.1.0"

STALE_BUILD = native.guard()
"""The compiled modules built from other source than is here now (then none is used)."""
