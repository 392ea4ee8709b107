"""The Redis run store: scripts, the run records and the log mirror."""
