"""Uploaded files: content-addressed storage and text extraction."""
