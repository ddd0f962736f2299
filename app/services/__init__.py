"""Use cases. The API, the UI, the CLI and the worker all go through these functions."""
