"""An OpenAI-compatible Chat Completions upstream: request body, stream translator, provider."""
