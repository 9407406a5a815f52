"""Lexical matching: language-aware tokenisation and BM25 scoring of sentences."""

from lexical.bm25 import SentenceBM25
from lexical.tokenize import TOKENIZER_VERSION, detect_language, letter_counts, tokenize

__all__ = ["TOKENIZER_VERSION", "SentenceBM25", "detect_language", "letter_counts", "tokenize"]
