"""The package version, where library modules can read it without importing
the package's ``__init__`` (the public facade above them)."""

__version__ = "0.1.0"
