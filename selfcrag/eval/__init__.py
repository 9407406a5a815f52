"""Measuring selfcrag: question sets with gold evidence (the format of shared/eval), and ``selfcrag bench``."""
