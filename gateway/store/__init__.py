"""Where runs and sessions live: the in-memory event log and session store, and Redis."""
