"""Chat-model plumbing: construction, transient-fault retries, ``<think>`` stripping, checked replies, redaction."""
