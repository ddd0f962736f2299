"""The results index, `training/results.jsonl`: one line per training run, evaluation or shipped reader that
a config, the README or the model card cites, with where its files are (a path, and the commit whose tree
holds them), its config, the sha256 of each adapter it made and its key metrics. Outputs themselves stay out
of git (runs/, ignored); the index is what git keeps of them.

    python -m training.results_index add runs/open4 [--name open4] [--config training/configs/X.toml]
    python -m training.results_index build --commit COMMIT   # the lines of training/results/ at COMMIT

`add` appends a run or evaluation folder of runs/ (it refuses a name already there); cite it by its name.
`build` remade the index from the tree of training/results/ as git last held it (up to 2026-11-28) and
from every version of inference/reader/ before COMMIT. An adapter's sha256 is that of its
adapter_model.safetensors, the name training/weights.py finds it by (`init_adapter = "sha256:<hex>"`).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
INDEX = REPO / "training" / "results.jsonl"
ADAPTER_WEIGHTS = "adapter_model.safetensors"
READER_PATH = "inference/reader"
OLD_RESULTS = "training/results"


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def load_index(path: Path = INDEX) -> list[dict[str, Any]]:
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def where_adapter_was(sha256: str, index: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every index line holding an adapter with this sha256, each with that adapter's own path and commit."""
    return [
        {
            "name": e["name"],
            "path": e["path"] if a["path"] == "." else f"{e['path']}/{a['path']}",
            "commit": a.get("commit"),
        }
        for e in index
        for a in e.get("adapters", [])
        if a["sha256"] == sha256
    ]


# --- key metrics, read from a folder's own files --------------------------------------------------------


def train_metrics(read: Callable[[str], str | None]) -> dict[str, Any]:
    """Steps, the last SFT loss, the RL reward and accuracy (mean of the run and last step), hours; and the
    throughput benchmark's speed-ups when the folder has them. `read(name)` is a file's text or None."""
    steps = [json.loads(line) for line in (read("metrics.jsonl") or "").splitlines() if line.strip()]
    if not steps:  # a run that kept only its progress lines
        steps = [_progress_step(line) for line in (read("progress.txt") or "").splitlines() if line.startswith("step ")]
    if not steps:
        return {}
    sft = [m for m in steps if m.get("phase") == "sft"]
    rl = [m for m in steps if m.get("phase") == "rl"]
    out: dict[str, Any] = {"steps": max(m["step"] for m in steps), "sft_steps": len(sft), "rl_steps": len(rl)}
    if sft:
        out["sft_loss_last"] = sft[-1]["loss"]
    if rl:
        for key in ("reward", "accuracy"):
            out[f"rl_{key}_mean"] = round(sum(m[key] for m in rl) / len(rl), 4)
            out[f"rl_{key}_last"] = rl[-1][key]
    if all("seconds" in m for m in steps):
        out["hours"] = round(sum(m["seconds"] for m in steps) / 3600, 2)
    return out


def _progress_step(line: str) -> dict[str, Any]:
    """'step 3/40 rl · reward 0.250 · accuracy 0.167 · loss +0.0511 · …' -> the metrics it shows."""
    head = re.match(r"step (\d+)/\d+ (\w+)", line)
    assert head, line
    values = dict(re.findall(r"(reward|accuracy|loss) ([+-]?[\d.]+)", line))
    return {"step": int(head[1]), "phase": head[2], **{k: float(v) for k, v in values.items()}}


def bench_speedups(read: Callable[[str], str | None], names: list[str]) -> dict[str, float]:
    """The throughput benchmark's speed-up of its largest group of questions, per bench-*.json file."""
    out = {}
    for name in names:
        if re.fullmatch(r"bench[^/]*\.json", name):
            rows = json.loads(read(name) or "{}").get("throughput", [])
            if rows:
                best = max(rows, key=lambda r: r["questions"])
                out[f"{name.removesuffix('.json')}_speedup_{best['questions']}q"] = round(best["speedup"], 2)
    return out


def eval_metrics(results: dict[str, Any]) -> dict[str, Any]:
    """`SUITE/GROUP/KIND` -> n, sub-EM, exact match (4 decimals); `speed/SET` -> document tokens/s."""
    out: dict[str, Any] = {}
    for r in results.get("summary", []):
        out[f"{r['suite']}/{r['group']}/{r['kind']}"] = {
            "n": r["n"],
            "sub_em": round(r["sub_em"], 4),
            "exact_match": round(r["exact_match"], 4),
        }
    for t in results.get("timing", []):
        if t.get("tokens_per_s") is not None:
            out[f"speed/{t['set']}"] = t["tokens_per_s"]
    return out


def describe_folder(
    name: str,
    path: str,
    files: list[str],
    read: Callable[[str], str | None],
    sha256: Callable[[str], str],
    commit: str | None,
    adapter_commit: Callable[[str], str | None],
    config_file: str | None,
) -> dict[str, Any]:
    """The index line of one run or evaluation folder (`files` relative to it)."""
    kind = "eval" if "results.json" in files else "train"
    entry: dict[str, Any] = {"name": name, "kind": kind, "path": path, "commit": commit}
    if kind == "eval":
        results = json.loads(read("results.json") or "{}")
        entry["config"] = results.get("config")
        entry["metrics"] = eval_metrics(results)
    else:
        entry["config_file"] = config_file
        entry["config"] = json.loads(read("config.json") or "null")
        entry["metrics"] = {**train_metrics(read), **bench_speedups(read, files)}
    adapters = sorted({f.rsplit("/", 1)[0] for f in files if f.endswith("/" + ADAPTER_WEIGHTS)})
    entry["adapters"] = [
        {"path": a, "sha256": sha256(f"{a}/{ADAPTER_WEIGHTS}"), "commit": adapter_commit(a)} for a in adapters
    ]
    entry["files"] = sorted(files)
    return entry


# --- add: a folder of runs/ ---------------------------------------------------------------------------


def add(folder: Path, name: str | None = None, config_file: str | None = None, index: Path = INDEX) -> dict[str, Any]:
    """Append the line of a run or evaluation folder on disk (not in git: `commit` is None, `ran_at` the
    checkout's commit) and return it."""
    folder = folder.resolve()
    if not ((folder / "metrics.jsonl").is_file() or (folder / "results.json").is_file()):
        raise ValueError(f"{folder} is neither a training run (metrics.jsonl) nor an evaluation (results.json)")
    name = name or folder.name
    if any(e["name"] == name for e in load_index(index)):
        raise ValueError(f"{name!r} is in {index} already: give another --name")
    files = sorted(
        p.relative_to(folder).as_posix()
        for p in folder.rglob("*")
        if p.is_file() and not p.relative_to(folder).parts[0].startswith("checkpoint")
    )

    def read(rel: str) -> str | None:
        p = folder / rel
        return p.read_text(encoding="utf-8") if p.is_file() else None

    try:
        path = folder.relative_to(REPO).as_posix()
    except ValueError:
        path = folder.as_posix()
    entry = describe_folder(
        name, path, files, read, lambda rel: file_sha256(folder / rel), None, lambda _a: None, config_file
    )
    entry["ran_at"] = _git("rev-parse", "HEAD").strip()
    with open(index, "a", encoding="utf-8") as f:
        f.write(json.dumps(entry, ensure_ascii=False) + "\n")
    return entry


# --- build: training/results/ and inference/reader/ from git ------------------------------------------


def _git(*args: str) -> str:
    return subprocess.run(["git", "-C", str(REPO), *args], check=True, capture_output=True, text=True).stdout


def _git_bytes(spec: str) -> bytes | None:
    done = subprocess.run(["git", "-C", str(REPO), "show", spec], check=False, capture_output=True)
    return done.stdout if done.returncode == 0 else None


def build(commit: str) -> Iterator[dict[str, Any]]:
    """The index lines of training/results/ as `commit` holds it, then one per version of the shipped reader."""
    commit = _git("rev-parse", commit).strip()
    listed = _git("ls-tree", "-r", "--name-only", commit, "--", OLD_RESULTS).splitlines()
    if not listed:
        raise ValueError(f"{commit[:7]} has no {OLD_RESULTS}/: give the last commit that has it")
    added: dict[str, str] = {}  # path -> the first commit that added it
    current = None
    for line in _git("log", "--diff-filter=A", "--format=C%H", "--name-only", commit, "--", OLD_RESULTS).splitlines():
        if line.startswith("C"):
            current = line[1:]
        elif line:
            added[line] = current  # git log runs newest first: the oldest addition wins

    def text(path: str) -> str | None:
        data = _git_bytes(f"{commit}:{path}")
        return data.decode("utf-8") if data is not None else None

    order = {c: i for i, c in enumerate(_git("rev-list", "--reverse", commit).split())}
    folders: dict[str, list[str]] = {}
    for path in listed:
        rel = path.removeprefix(OLD_RESULTS + "/")
        top, _, inner = rel.partition("/")
        if inner:
            folders.setdefault(top, []).append(inner)
        else:  # a loose file: a figure made from several evaluations
            yield {"name": top, "kind": "figure", "path": path, "commit": added.get(path)}
    for name in sorted(folders):
        base = f"{OLD_RESULTS}/{name}"
        files = folders[name]
        config = f"training/configs/small-{name}.toml"
        yield describe_folder(
            name,
            base,
            files,
            lambda rel, b=base: text(f"{b}/{rel}"),
            lambda rel, b=base: hashlib.sha256(_git_bytes(f"{commit}:{b}/{rel}") or b"").hexdigest(),
            min((added[f"{base}/{f}"] for f in files if f"{base}/{f}" in added), key=order.__getitem__),
            lambda a, b=base: _git("log", "-1", "--format=%H", commit, "--", f"{b}/{a}").strip() or None,
            config if _git("ls-tree", "--name-only", commit, "--", config).strip() else None,
        )
    yield from readers(commit)


def readers(commit: str) -> Iterator[dict[str, Any]]:
    """One line per version of inference/reader/ up to `commit`, oldest first: the configs that started from
    the shipped reader started from one of these."""
    shipped = _git("log", "--reverse", "--format=%H %s", commit, "--", f"{READER_PATH}/{ADAPTER_WEIGHTS}")
    for line in shipped.splitlines():
        sha, subject = line.split(" ", 1)
        weights = _git_bytes(f"{sha}:{READER_PATH}/{ADAPTER_WEIGHTS}")
        if weights is None:
            continue
        yield {
            "name": f"reader-{sha[:7]}",
            "kind": "reader",
            "path": READER_PATH,
            "commit": sha,
            "note": subject[:200],
            "adapters": [{"path": ".", "sha256": hashlib.sha256(weights).hexdigest(), "commit": sha}],
        }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m training.results_index", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    a = sub.add_parser("add", help="append a run or evaluation folder (of runs/) to the index")
    a.add_argument("folder", type=Path)
    a.add_argument("--name", help="its name in the index (default: the folder's name)")
    a.add_argument("--config", help="the config file it ran, e.g. training/configs/small-sft.toml")
    b = sub.add_parser("build", help="print the index lines of training/results/ as a commit holds it")
    b.add_argument("--commit", default="HEAD")
    args = parser.parse_args(argv)
    try:
        if args.command == "add":
            entry = add(args.folder, args.name, args.config)
            print(f"{entry['name']} ({entry['kind']}) added to {INDEX.relative_to(REPO)}")
        else:
            for entry in build(args.commit):
                print(json.dumps(entry, ensure_ascii=False))
    except (ValueError, subprocess.CalledProcessError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
