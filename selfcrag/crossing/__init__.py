"""Crossing languages: a question's words carried into the other language of the index, offline."""
