"""Structure-aware sentence splitting for Chinese and English text."""

from selfcrag.split.sentences import SentenceSpan, document_title, split_sentences

__all__ = ["SentenceSpan", "document_title", "split_sentences"]
