"""Ingestion: finding and reading files, and turning them into a committed index."""
