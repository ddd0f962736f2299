"""Imported once by the parse fork server (app/documents/sandbox.py): every parse process is
forked with the parsers already loaded and `unstructured` already made offline."""

from app.documents import parsing  # noqa: F401
from app.documents.rich import prepare

prepare()
import pypdf  # noqa: E402, F401
