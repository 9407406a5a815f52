"""Sentence embedders: offline models shipped in PyPI wheels, or an OpenAI-compatible endpoint."""

from embedding.embedders import OFFLINE_MODELS, Embedder, load_embedder

__all__ = ["OFFLINE_MODELS", "Embedder", "load_embedder"]
