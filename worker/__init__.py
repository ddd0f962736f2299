"""Celery worker: thin tasks that call app services by id."""
