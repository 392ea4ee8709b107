"""Runs: the tool loop, the run and its manager, how runs end, durable runs, planning."""
