"""Parse success and speed on real documents, through the same sandbox as an upload
(app.documents.sandbox.parse_untrusted: a forked child with memory, CPU and time limits).

- PDF: the 60 CUAD contracts in ../shared/data/contracts/pdf.
- Books: the four Project Gutenberg novels in ../shared/data/books as TXT, and converted by the
  test helper (tests/docgen.py) to Markdown, HTML, DOCX and EPUB. For these the check is stronger
  than "no error": every paragraph of the book must come out, whole and in order.

Prints a Markdown table: files, successes, MB, pages (PDF) or sections, seconds, pages/s, MB/s.

    .venv/bin/python -m benchmarks.parse_corpus [--repeat 1]
"""

from __future__ import annotations

import argparse
import re
import time
from collections import defaultdict
from pathlib import Path

from app.documents.base import ParseError
from app.documents.normalise import normalise
from app.documents.sandbox import parse_untrusted, warm_up
from tests import docgen


def _words(text: str) -> str:
    return re.sub(r"\s+", " ", normalise(text)).strip()


def paragraphs_in_order(paragraphs: list[str], text: str) -> float:
    """Share of paragraphs found whole, each after the previous one. Compared as words (a
    Gutenberg TXT keeps its hard line breaks) and without a leading bullet (lists lose theirs)."""
    text = _words(text)
    found, at = 0, 0
    for p in paragraphs:
        i = text.find(_words(p).lstrip("•*- "), at)
        if i >= 0:
            found, at = found + 1, i
    return found / max(1, len(paragraphs))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=1, help="parse each file this many times (best time kept)")
    args = ap.parse_args()

    warm_up()
    rows: dict[str, dict] = defaultdict(
        lambda: {"files": 0, "ok": 0, "bytes": 0, "pages": 0, "chars": 0, "seconds": 0.0, "order": [], "errors": []}
    )

    def run(fmt: str, name: str, data: bytes, paragraphs: list[str] | None = None) -> None:
        row = rows[fmt]
        row["files"] += 1
        row["bytes"] += len(data)
        best = None
        for _ in range(args.repeat):
            t = time.perf_counter()
            try:
                parsed = parse_untrusted(data)
            except ParseError as exc:
                row["errors"].append(f"{name}: {exc}")
                return
            best = min(best or 1e9, time.perf_counter() - t)
        row["ok"] += 1
        row["seconds"] += best
        row["pages"] += len(parsed.page_starts)
        row["chars"] += len(parsed.text)
        if paragraphs is not None:
            row["order"].append(paragraphs_in_order(paragraphs, parsed.text))

    for path in sorted((docgen.CONTRACTS / "pdf").glob("*.pdf")):
        run("pdf", path.name, path.read_bytes())
    books = docgen.books()
    for fmt in docgen.FORMATS:
        for stem, book in books.items():
            data = (docgen.BOOKS / f"{stem}.txt").read_bytes() if fmt == "txt" else docgen.convert(book, fmt)
            run(fmt, f"{stem}.{fmt}", data, book.paragraphs)

    print(
        "| format | files | parsed | MB in | pages / sections | M chars out | seconds | pages/s | MB/s "
        "| paragraphs whole & in order |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for fmt, r in rows.items():
        mb = r["bytes"] / 1e6
        unit = "pages" if fmt == "pdf" else "sections"
        order = f"{100 * sum(r['order']) / len(r['order']):.1f}%" if r["order"] else "–"
        pps = f"{r['pages'] / r['seconds']:.0f}" if fmt == "pdf" and r["seconds"] else "–"
        print(
            f"| {fmt.upper() if fmt != 'md' else 'Markdown'} | {r['files']} | {r['ok']} | {mb:.2f} | "
            f"{r['pages']:,} {unit} | {r['chars'] / 1e6:.2f} | {r['seconds']:.2f} | {pps} | "
            f"{mb / r['seconds']:.2f} | {order} |"
        )
    for fmt, r in rows.items():
        for err in r["errors"]:
            print(f"- {fmt}: {err}")
    print(
        f"\n(sandboxed parse per file, as an upload gets it; TXT books are the original Gutenberg files; "
        f"repeat={args.repeat}; machine: {Path('/proc/cpuinfo').read_text().count('processor')} CPU cores)"
    )


if __name__ == "__main__":
    main()
