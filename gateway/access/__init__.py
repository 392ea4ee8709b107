"""Who may do what: the key ring and the per-key limits."""
