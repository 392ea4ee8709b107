"""Bulk research on the Message Batches API: many questions, one tool loop each, advanced
together a round at a time (each round's model calls go out as one Message Batch)."""
