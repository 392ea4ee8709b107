"""Search: the local FTS5 index over the bundled filings, and web_search (Exa or offline)."""
