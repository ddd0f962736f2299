"""Hostile uploads, built on the fly: each is (name, file name sent, bytes, what the user must see).
Shared by tests/integration/test_upload_safety.py and benchmarks/hostile_inputs.py."""

from __future__ import annotations

import io
import shutil
import sys
import zipfile
import zlib
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Callable

from pypdf import PdfWriter
from pypdf.generic import DictionaryObject, NameObject, StreamObject

from tests import docgen

CUAD_000 = docgen.CONTRACTS / "pdf" / "cuad-000.pdf"


@dataclass(frozen=True)
class Hostile:
    name: str
    filename: str
    make: Callable[[], bytes]
    #: "failed" (stored, parse refused), "ready" (parsed safely) or "refused" (HTTP error, nothing stored)
    outcome: str
    #: a fragment of what the user is told (see `told`)
    expect: str

    @cached_property
    def data(self) -> bytes:
        return self.make()


def told(status_code: int, body: dict) -> str:
    """What the user is told about an upload, in one line (the API's answer, shortened)."""
    if status_code != 201:
        return f"HTTP {status_code}: {body.get('detail')}"
    if body["status"] == "failed":
        return body["error"]
    title = body["title"]
    shown = title if len(title) <= 40 else f"{title[:12]}…"
    return f"ready as {shown!r} ({len(title)}-character title), {body['char_count']:,} characters"


def outcome(status_code: int, body: dict) -> str:
    return body["status"] if status_code == 201 else "refused"


def truncated_pdf() -> bytes:
    data = CUAD_000.read_bytes()
    return data[: len(data) * 2 // 5]


def encrypted_pdf() -> bytes:
    w = PdfWriter(clone_from=str(CUAD_000))
    w.encrypt(user_password="secret", owner_password="owner", algorithm="AES-256")
    buf = io.BytesIO()
    w.write(buf)
    return buf.getvalue()


def pdf_bomb(mib: int = 1024) -> bytes:
    """One page whose content stream inflates to `mib` MiB (1 GiB from a ~1 MB file)."""
    w = PdfWriter()
    page = w.add_blank_page(200, 200)
    font = DictionaryObject(
        {
            NameObject("/Type"): NameObject("/Font"),
            NameObject("/Subtype"): NameObject("/Type1"),
            NameObject("/BaseFont"): NameObject("/Helvetica"),
        }
    )
    page[NameObject("/Resources")] = DictionaryObject(
        {NameObject("/Font"): DictionaryObject({NameObject("/F1"): w._add_object(font)})}
    )
    co = zlib.compressobj(9)
    parts = [co.compress(b"BT /F1 12 Tf 10 10 Td (boom) Tj ET\n")]
    block = b" " * 2**20
    parts += [co.compress(block) for _ in range(mib)]
    parts.append(co.flush())
    stream = StreamObject()
    stream._data = b"".join(parts)
    stream[NameObject("/Filter")] = NameObject("/FlateDecode")
    page[NameObject("/Contents")] = w._add_object(stream)
    buf = io.BytesIO()
    w.write(buf)
    return buf.getvalue()


def docx_zip_bomb(mib: int = 1024) -> bytes:
    """A real DOCX whose word/document.xml is padded to `mib` MiB of spaces (~1 MB compressed)."""
    small = docgen.to_docx(docgen.small_book())
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(small)) as src, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            content = src.read(info)
            if info.filename != "word/document.xml":
                dst.writestr(info, content)
                continue
            entry = zipfile.ZipInfo("word/document.xml")
            entry.compress_type = zipfile.ZIP_DEFLATED
            with dst.open(entry, "w", force_zip64=True) as f:
                f.write(content[: -len(b"</w:document>")])
                for _ in range(mib):
                    f.write(b" " * 2**20)
                f.write(b"</w:document>")
    return out.getvalue()


def docx_billion_laughs() -> bytes:
    """An XML entity-expansion bomb inside word/document.xml."""
    small = docgen.to_docx(docgen.small_book())
    laughs = (
        '<?xml version="1.0"?><!DOCTYPE w:document [<!ENTITY a "lol">'
        + "".join(f'<!ENTITY {chr(98 + i)} "{("&" + chr(97 + i) + ";") * 10}">' for i in range(9))
        + ']><w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main">'
        "<w:body><w:p><w:r><w:t>&j;</w:t></w:r></w:p></w:body></w:document>"
    )
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(small)) as src, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            dst.writestr(info, laughs if info.filename == "word/document.xml" else src.read(info))
    return out.getvalue()


def epub_many_entries(n: int = 20_000) -> bytes:
    return docgen.to_epub(docgen.small_book(), extra_entries=n)


def executable() -> bytes:
    exe = shutil.which("ls") or sys.executable
    return Path(exe).read_bytes()[: 512 * 1024]


def deep_html(depth: int = 200_000) -> bytes:
    return b"<html><body>" + b"<div>" * depth + b"deep" + b"</div>" * depth + b"</body></html>"


NON_UTF8 = ("Caf\u00e9 cr\u00e8me, na\u00efve fa\u00e7ade \u2014 \u201cquoted\u201d. " * 20).encode("cp1252")


def hostile_inputs(bomb_mib: int = 1024) -> list[Hostile]:
    """The table of the closing note. `bomb_mib` sizes the two bombs (tests use less than 1 GiB: the
    PDF limit trips at 75 MB, the ZIP ratio guard at any size)."""
    return [
        Hostile(
            "truncated PDF (first 40% of a contract)",
            "contract.pdf",
            truncated_pdf,
            "failed",
            "the PDF is damaged or unreadable",
        ),
        Hostile("encrypted PDF (AES-256, user password)", "secret.pdf", encrypted_pdf, "failed", "password-protected"),
        Hostile(
            f"PDF bomb: a {bomb_mib} MiB content stream",
            "bomb.pdf",
            lambda: pdf_bomb(bomb_mib),
            "failed",
            "stream too large to decompress",
        ),
        Hostile(
            f"DOCX zip bomb: document.xml of {bomb_mib} MiB",
            "bomb.docx",
            lambda: docx_zip_bomb(bomb_mib),
            "failed",
            "(a ZIP bomb?)",
        ),
        Hostile(
            "DOCX with an XML entity bomb (billion laughs)",
            "laughs.docx",
            docx_billion_laughs,
            "failed",
            "the DOCX file is damaged or unreadable",
        ),
        Hostile(
            "EPUB with 20,000 entries",
            "many.epub",
            epub_many_entries,
            "failed",
            "more than the 5,000 a document may have",
        ),
        Hostile("executable renamed .pdf", "report.pdf", executable, "failed", "a Linux executable"),
        Hostile("zero-byte file", "empty.txt", lambda: b"", "failed", "the file is empty"),
        Hostile("HTML nested 200,000 levels deep", "deep.html", deep_html, "failed", "no text could be extracted"),
        Hostile(
            "10 MB file name",
            "a" * (10 * 2**20) + ".txt",
            lambda: b"A short note with a very long name.",
            "refused",
            "HTTP 400",
        ),
        Hostile(
            "4,000-character file name",
            "b" * 4000 + ".txt",
            lambda: b"A short note with a long name.",
            "ready",
            "(300-character title)",
        ),
        Hostile(
            "path-traversal file name",
            "../../../../etc/passwd",
            lambda: b"root:x:0:0 is not a password file here.",
            "ready",
            "ready as 'passwd'",
        ),
        Hostile("non-UTF-8 text (Windows-1252)", "cafe.txt", lambda: NON_UTF8, "ready", "ready as 'cafe.txt'"),
    ]
