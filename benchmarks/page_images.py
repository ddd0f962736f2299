"""How long a PDF page takes to become the PNG that the provenance view shows
(GET /api/documents/{id}/pages/{n}.png renders it once, then serves the cached file).

    nice -n 10 .venv/bin/python -m benchmarks.page_images ../shared/data/contracts/pdf/cuad-026.pdf --pages 20

Prints ms per page for PDFium's render plus PNG encoding in this process, and for what the route does
on a first request: the same in a fresh, limited child process (app.documents.pages.render_untrusted).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from app.documents.pages import SCALE, render_png, render_untrusted


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("pdf", type=Path)
    ap.add_argument("--pages", type=int, default=20)
    ap.add_argument("--scale", type=float, default=SCALE)
    args = ap.parse_args()
    import pypdfium2 as pdfium

    n = min(args.pages, len(pdfium.PdfDocument(str(args.pdf))))
    inproc, child, sizes = [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        for k in range(1, n + 1):
            t = time.perf_counter()
            data = render_png(args.pdf, k, args.scale)
            inproc.append(1000 * (time.perf_counter() - t))
            sizes.append(len(data))
            t = time.perf_counter()
            render_untrusted(args.pdf, k, Path(tmp) / f"{k}.png", args.scale)
            child.append(1000 * (time.perf_counter() - t))
    print(
        f"{args.pdf.name}: {n} pages at scale {args.scale} ({72 * args.scale:.0f} dpi), "
        f"PNG {statistics.mean(sizes) / 1024:.0f} KiB on average"
    )
    for name, ms in (("in process", inproc), ("limited child (first request)", child)):
        print(
            f"  {name:32s} mean {statistics.mean(ms):6.1f} ms/page  median {statistics.median(ms):6.1f}  "
            f"max {max(ms):6.1f}"
        )


if __name__ == "__main__":
    main()
