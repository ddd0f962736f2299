"""The JSON API under /api."""
