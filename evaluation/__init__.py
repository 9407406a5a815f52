"""Measuring selfcrag on question sets with gold evidence (the format of shared/eval)."""
