"""Longread: ask questions of whole books and contracts."""
