"""Content-addressed blob store: a file is named by the SHA-256 of its bytes, never by the
client's filename, and written atomically."""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path


def blob_path(blob_dir: Path, sha256: str) -> Path:
    return blob_dir / sha256[:2] / sha256


def page_dir(data_dir: Path, sha256: str) -> Path:
    """Where the page images of the stored PDF `sha256` are cached (app/services/documents.py page_image)."""
    return data_dir / "pages" / sha256


def store_blob(blob_dir: Path, data: bytes) -> str:
    sha256 = hashlib.sha256(data).hexdigest()
    path = blob_path(blob_dir, sha256)
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".upload-")
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    return sha256


def read_blob(blob_dir: Path, sha256: str) -> bytes:
    return blob_path(blob_dir, sha256).read_bytes()
