"""Codecs of this family (filled in by its implementation)."""
CODECS: list = []
