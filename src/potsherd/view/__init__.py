"""The local web viewer (``potsherd view``): a file browser, a three.js 3D view, the document
tree with each field's byte span, and a hex pane (see :mod:`potsherd.view.server` for the API)."""
from .server import make_server, serve

__all__ = ["make_server", "serve"]
