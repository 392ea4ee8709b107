"""research-gateway: the Anthropic tool-use loop over SEC filings and the web, as SSE."""

__version__ = "0.1.0"
