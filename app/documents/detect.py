"""Which format a file is, decided by its bytes: never by the client's filename or content type.

ZIP containers (DOCX, EPUB) are inspected, and refused before any parser sees them when they
look like a decompression bomb: too many entries, too much uncompressed data, or an entry that
expands too far. The limits fit any real book or contract with room to spare.
"""

from __future__ import annotations

import io
import re
import zipfile
import zlib
from dataclasses import dataclass

from app.documents.base import ParseError

FORMATS = ("pdf", "docx", "epub", "html", "md", "txt")


@dataclass(frozen=True)
class ZipLimits:
    #: a long EPUB (one file per chapter, images, fonts) has a few hundred entries
    max_entries: int = 5_000
    #: total declared uncompressed size; Python's zipfile never reads past an entry's declared size
    max_total_bytes: int = 256 * 1024 * 1024
    #: an entry larger than `ratio_floor_bytes` may expand at most this many times (XML: 5-20x)
    max_ratio: int = 100
    ratio_floor_bytes: int = 1024 * 1024


ZIP_LIMITS = ZipLimits()

# Signatures of files people upload by mistake (or on purpose), named so the error can say what it is.
_KNOWN_BINARIES: list[tuple[bytes, str]] = [
    (b"MZ", "a Windows executable"),
    (b"\x7fELF", "a Linux executable"),
    (b"\xcf\xfa\xed\xfe", "a macOS executable"),
    (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", "a legacy Office file (.doc) or a password-protected Office file"),
    (b"{\\rtf", "an RTF document"),
    (b"\x89PNG", "a PNG image"),
    (b"\xff\xd8\xff", "a JPEG image"),
    (b"GIF8", "a GIF image"),
    (b"II*\x00", "a TIFF image"),
    (b"MM\x00*", "a TIFF image"),
    (b"\x1f\x8b", "a gzip archive"),
    (b"7z\xbc\xaf\x27\x1c", "a 7-Zip archive"),
    (b"Rar!", "a RAR archive"),
    (b"BZh", "a bzip2 archive"),
    (b"\xfd7zXZ\x00", "an xz archive"),
]
_SUPPORTED = "PDF, DOCX, EPUB, HTML, Markdown or plain text"

_HTML_START = re.compile(
    rb"^(?:\xef\xbb\xbf)?\s*(?:<\?xml[^>]*>\s*)?(?:<!--.*?-->\s*)*<(?:!doctype\s+html|html|head|body|title|meta|p|div|h[1-6]|article|section|main|table)\b",
    re.IGNORECASE | re.DOTALL,
)
# ATX headings ("# Title", up to three spaces of indent), Setext headings (a line underlined with === or ---),
# and a document that opens with an ATX heading on a line of its own ("# Title", then a blank line).
_MD_HEADING = re.compile(r"^ {0,3}#{1,6}[ \t]+\S", re.MULTILINE)
_MD_SETEXT = re.compile(r"^ {0,3}[^\s#>*+-][^\n]*\n {0,3}(?:={3,}|-{3,})[ \t]*$", re.MULTILINE)
_MD_TITLE = re.compile(r"\A\s*#{1,6}[ \t]+\S[^\n]*(?:\n[ \t]*\n|\n?\Z)")
#: how much of a text file is looked at to tell Markdown from plain text (headings may come late)
MD_SNIFF_BYTES = 1024 * 1024
_MD_FEATURE = re.compile(r"^(?:```|~~~|[-*+][ \t]+\S|\d+\.[ \t]+\S|>[ \t])|\]\([^)\s]+\)|\*\*\S|__\S", re.MULTILINE)


def unsupported(what: str) -> ParseError:
    return ParseError(f"unsupported file type: this looks like {what}, not {_SUPPORTED}")


def detect_format(data: bytes, limits: ZipLimits = ZIP_LIMITS) -> str:
    """One of FORMATS, or ParseError saying what the file seems to be instead."""
    if not data:
        raise ParseError("the file is empty")
    if data[:1024].lstrip(b"\xef\xbb\xbf \t\r\n")[:5] == b"%PDF-":
        return "pdf"
    if data.startswith((b"PK\x03\x04", b"PK\x05\x06")):
        return _zip_format(data, limits)
    textual = _looks_textual(data[:65536])
    for magic, what in _KNOWN_BINARIES:
        # a text that merely starts with "MZ" or "BZh" is still text; real binaries are not textual
        if data.startswith(magic) and (not textual or magic == b"{\\rtf"):
            raise unsupported(what)
    if not textual:
        raise unsupported("a binary file")
    head = data[:4096]
    if _HTML_START.match(head):
        return "html"
    if is_markdown(decode_text(data[:MD_SNIFF_BYTES], strict_tail=False)):
        return "md"
    return "txt"


def _looks_textual(head: bytes) -> bool:
    if head.startswith((b"\xff\xfe", b"\xfe\xff")):  # UTF-16 carries NULs
        return True
    if b"\x00" in head:
        return False
    controls = sum(1 for b in head if b < 32 and b not in (9, 10, 12, 13, 27))
    return controls <= len(head) // 100  # a text file has next to no control bytes


def is_markdown(text: str) -> bool:
    """Markdown is plain text with conventions; call it Markdown when it uses them: at least two
    headings (ATX `#` or Setext underlines), or one heading and another Markdown construct (list,
    fence, link, bold), or a document that opens with a `# Title` line. A lone `# comment` line
    followed by code stays plain text."""
    text = text.replace("\r\n", "\n")
    headings = len(_MD_HEADING.findall(text)) + len(_MD_SETEXT.findall(text))
    if headings >= 2:
        return True
    return headings == 1 and (_MD_FEATURE.search(text) is not None or _MD_TITLE.match(text) is not None)


def decode_text(data: bytes, strict_tail: bool = True) -> str:
    """Bytes of a text file as str: BOMs honoured, UTF-8 first, else Windows-1252 (Project
    Gutenberg and many older files), else Latin-1 (which never fails)."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return data.decode("utf-16", errors="replace")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        # A prefix cut in the middle of a UTF-8 sequence is still UTF-8.
        if not strict_tail and exc.start >= len(data) - 3:
            return data[: exc.start].decode("utf-8-sig")
    # UTF-8 with a few damaged bytes stays UTF-8 (the damage shows as U+FFFD): it is that when
    # it holds more well-formed multi-byte characters than bad bytes. Otherwise a legacy code page.
    lenient = data.decode("utf-8-sig", errors="replace")
    bad = lenient.count("\ufffd")
    if sum(1 for ch in lenient if ord(ch) > 0x7F) - bad > bad:
        return lenient
    try:
        return data.decode("cp1252")
    except UnicodeDecodeError:
        return data.decode("latin-1")


# What zipfile raises on damaged archives (a corrupt header can claim an unsupported zip version).
_ZIP_ERRORS = (
    zipfile.BadZipFile,
    zipfile.LargeZipFile,
    zlib.error,
    NotImplementedError,
    ValueError,
    OSError,
    EOFError,
    RuntimeError,
)


def _zip_format(data: bytes, limits: ZipLimits) -> str:
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
        infos = archive.infolist()
    except _ZIP_ERRORS as exc:
        raise ParseError(f"the file is a damaged ZIP container (DOCX or EPUB): {exc}") from exc
    check_zip(infos, limits)
    names = {i.filename for i in infos}
    if "mimetype" in names:
        mimetype = _read_small(archive, "mimetype", 200).strip()
        if mimetype == b"application/epub+zip":
            return "epub"
        if mimetype.startswith(b"application/vnd.oasis.opendocument"):
            raise unsupported("an OpenDocument file (save it as DOCX or PDF)")
    if "[Content_Types].xml" in names:
        types = _read_small(archive, "[Content_Types].xml", 1024 * 1024)
        if (
            b"wordprocessingml.document.main+xml" in types
            or b"ms-word.document.macroEnabled.main+xml" in types
            or b"wordprocessingml.template.main+xml" in types
        ):
            return "docx"
        if b"spreadsheetml" in types:
            raise unsupported("a spreadsheet (XLSX)")
        if b"presentationml" in types:
            raise unsupported("a presentation (PPTX)")
    raise unsupported("a ZIP archive")


def check_zip(infos: list[zipfile.ZipInfo], limits: ZipLimits = ZIP_LIMITS) -> None:
    """Refuse archives that could exhaust memory or time when unpacked."""
    if len(infos) > limits.max_entries:
        raise ParseError(
            f"the file is a ZIP container with {len(infos):,} entries, more than the "
            f"{limits.max_entries:,} a document may have"
        )
    total = sum(i.file_size for i in infos)
    if total > limits.max_total_bytes:
        raise ParseError(
            f"the file would unpack to {total / 2**20:,.0f} MiB, more than the "
            f"{limits.max_total_bytes / 2**20:,.0f} MiB limit (a ZIP bomb?)"
        )
    for i in infos:
        if i.flag_bits & 0x1:
            raise ParseError("the document is encrypted (password-protected); upload an unprotected copy")
        if i.file_size > limits.ratio_floor_bytes and i.file_size > limits.max_ratio * max(i.compress_size, 1):
            raise ParseError(
                f"the file has an entry that expands {i.file_size / max(i.compress_size, 1):,.0f} "
                f"times, more than the {limits.max_ratio} allowed (a ZIP bomb?)"
            )


def _read_small(archive: zipfile.ZipFile, name: str, limit: int) -> bytes:
    try:
        with archive.open(name) as f:
            return f.read(limit)
    except _ZIP_ERRORS as exc:
        raise ParseError(f"the file is a damaged ZIP container (DOCX or EPUB): {exc}") from exc
