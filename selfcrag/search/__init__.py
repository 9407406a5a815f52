"""Hybrid sentence search: dense and BM25 rankings, fused, expanded into windows."""
