"""Real processes for the tests: redis-server on a free port, gateway workers."""
