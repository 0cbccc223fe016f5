"""hone: a performance engineer for Linux servers."""

__version__ = "0.1.0"
