"""SEC EDGAR: live and offline sources, the snapshot, and the SEC tools."""
