"""Imported once by the parser zygote (app/documents/sandbox.py): every parse process is forked
with the parsers already loaded and `unstructured` already made offline."""

import logging

from app.documents import parsing  # noqa: F401
from app.documents.rich import prepare

prepare()
import pypdf  # noqa: E402, F401

# pypdf warns about every repairable defect ("EOF marker not found"); the user sees the ParseError.
logging.getLogger("pypdf").setLevel(logging.ERROR)
