"""The HTTP surface: the app's wiring, handlers, middlewares, SSE writing and serving."""
