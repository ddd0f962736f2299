"""Starting weights named by content: a config's `init_adapter = "sha256:<hex>"` is the LoRA adapter whose
adapter_model.safetensors has that sha256, wherever it lies now. Folders change what they hold (the shipped
reader did seven times); a digest does not.

`resolve_adapter` is the one place that turns an `init_adapter` into a folder: it looks in the shipped
reader's folder and under runs/, and when the adapter is in neither it says which run of the results index
made it and the commit that holds it, with the commands that restore it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

from inference.models import READER_ADAPTER
from training.results_index import ADAPTER_WEIGHTS, INDEX, file_sha256, load_index, where_adapter_was

DIGEST = re.compile(r"sha256:([0-9a-f]{64})")
#: Where adapters are looked for: the shipped reader, then every run folder (relative to the working folder,
#: as `longread train` writes its runs).
SEARCH = (READER_ADAPTER, Path("runs"))


class AdapterNotFound(FileNotFoundError):
    """No adapter with that sha256 where we look; the message says where it was and how to restore it."""


def digest_of(ref: str | Path) -> str | None:
    """The hex digest of a `sha256:<hex>` reference, None for a folder path.

    >>> digest_of("sha256:" + "ab" * 32) == "ab" * 32, digest_of("runs/sft/adapter")
    (True, None)
    """
    match = DIGEST.fullmatch(str(ref))
    return match[1] if match else None


def resolve_adapter(ref: str | Path, search: Iterable[Path] = SEARCH, index: Path = INDEX) -> Path:
    """The adapter folder `ref` names: a `sha256:<hex>` reference found under `search`, or a folder as given."""
    digest = digest_of(ref)
    if digest is None:
        return Path(ref)
    roots = list(search)
    for root in roots:
        for weights in sorted(root.rglob(ADAPTER_WEIGHTS)) if root.is_dir() else ():
            if file_sha256(weights) == digest:
                return weights.parent
    raise AdapterNotFound(_not_found(digest, roots, index))


def _not_found(digest: str, roots: list[Path], index: Path) -> str:
    looked = ", ".join(str(r) for r in roots)
    places = where_adapter_was(digest, load_index(index))
    if not places:
        return (
            f"no adapter with sha256:{digest} in {looked}, and the results index ({index}) has none: "
            "check the digest, or put the adapter folder under runs/"
        )
    lines = [f"no adapter with sha256:{digest} in {looked}. The results index ({index.name}) has it:"]
    for p in places:
        if p["commit"]:
            target, commit = f"runs/adapters/{p['name']}", p["commit"][:7]
            lines.append(f"  {p['name']}: {p['path']} at commit {commit}; restore it with")
            lines.append(f"    mkdir -p {target}")
            files = (ADAPTER_WEIGHTS, "adapter_config.json")
            lines += [f"    git show {commit}:{p['path']}/{f} > {target}/{f}" for f in files]
        else:
            lines.append(f"  {p['name']}: {p['path']} (a local run, not in git: copy that folder under runs/)")
    return "\n".join(lines)
