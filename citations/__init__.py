"""Citation markers: answers split into cited sentences, and the citations they point at."""

from citations.markers import CitedSentence, build_citations, defuse_markers, join_cited, locate, split_cited

__all__ = ["CitedSentence", "build_citations", "defuse_markers", "join_cited", "locate", "split_cited"]
