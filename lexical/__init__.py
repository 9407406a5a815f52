"""Lexical matching: language-aware tokenisation and BM25 scoring of sentences."""

from lexical.bm25 import SentenceBM25
from lexical.tokenize import detect_language, tokenize

__all__ = ["SentenceBM25", "detect_language", "tokenize"]
