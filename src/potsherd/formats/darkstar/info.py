"""Summaries for ``potsherd info``: filled in below."""
from __future__ import annotations


def block_info(block: dict) -> dict:
    return {"class": block["className"].decode("latin-1"), "version": block["version"]}
