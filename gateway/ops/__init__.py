"""Operating the service: metrics, traces, the audit log, the per-run observer, processes."""
