"""Bookshop: an online bookshop service."""

__version__ = "2.4.1"
