"""Measuring what selfcrag costs: ingestion throughput, latencies, memory and disk (``selfcrag bench``)."""
