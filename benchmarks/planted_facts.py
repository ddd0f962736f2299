"""Planted-fact benchmark: which chunk size and memory size suit a model as the memory agent.

Each case is a window of real novel text (Project Gutenberg books in ../shared/data/books) with one
invented fact planted at a random sentence boundary, and a question only that fact answers. Every
(chunk_tokens x memory_tokens) setting reads all cases; the report gives sub-EM and exact match
of the answer (the last \\boxed{} or else the whole output), how often the gold survived into the
final memory, the final memory's length, and speed.

    .venv/bin/python -m benchmarks.planted_facts --settings 256x64,512x128 --facts 40 --doc-tokens 2048
"""

from __future__ import annotations

import argparse
import json
import random
import re
import string
import time
from dataclasses import dataclass
from pathlib import Path

from inference.agent import AgentConfig, MemoryAgent
from inference.chunking import token_starts
from inference.engines.transformers_engine import TransformersEngine
from inference.models import model_folder
from training.tasks import BOOKS_DIR

BOOKS = BOOKS_DIR

# --- planted facts ---------------------------------------------------------------------------
# Invented names and values, unlikely to occur in the novels, so the fact is the only source.
FIRST = ["Hollis", "Marguerite", "Tobias", "Ingrid", "Cornelius", "Odile", "Barnaby", "Sabine", "Leopold", "Wilhelmina"]
SURNAME = [
    "Quennell",
    "Ashdown",
    "Varga",
    "Pembrook",
    "Tallis",
    "Okonjo",
    "Fairweather",
    "Lindqvist",
    "Marchetti",
    "Brackley",
]
TITLE = ["Captain", "Doctor", "Professor", "Colonel", "Madame", "Judge"]
WORDS = [
    "amber",
    "falcon",
    "copper",
    "lantern",
    "violet",
    "harbour",
    "silent",
    "thistle",
    "winter",
    "orchid",
    "granite",
    "sparrow",
]
COLOURS = ["turquoise", "crimson", "ochre", "lavender", "emerald", "saffron", "charcoal", "magenta"]
TOWNS = ["Bramwick", "Eastholm", "Carrowmere", "Dunfallow", "Pellingford", "Ravenscar", "Otterbury", "Kilgarren"]
OBJECTS = ["silver compass", "brass key", "velvet pouch", "ivory chess piece", "pocket watch", "leather journal"]
PLACES = ["hollow oak", "chapel belfry", "cellar chimney", "boathouse loft", "garden sundial", "attic trunk"]
ANIMALS = ["goats", "geese", "beehives", "ponies", "peacocks", "alpacas"]
PETS = ["Biscuit", "Tuppence", "Marmaduke", "Pepperpot", "Sixpence", "Bartholomew"]


@dataclass(frozen=True)
class Fact:
    sentence: str
    question: str
    gold: str


def make_fact(rng: random.Random) -> Fact:
    """One planted fact from one of ten templates; the question never states the answer."""
    surname, other = rng.sample(SURNAME, 2)  # two people never share a surname
    person = f"{rng.choice(FIRST)} {surname}"
    titled = f"{rng.choice(TITLE)} {other}"
    town = rng.choice(TOWNS)
    kind = rng.randrange(10)
    if kind == 0:
        pw = " ".join(rng.sample(WORDS, 2))
        return Fact(f"The password to {titled}'s safe is '{pw}'.", f"What is the password to {titled}'s safe?", pw)
    if kind == 1:
        obj, place = rng.choice(OBJECTS), rng.choice(PLACES)
        return Fact(f"{person} hid the {obj} inside the {place}.", f"Where did {person} hide the {obj}?", place)
    if kind == 2:
        colour = rng.choice(COLOURS)
        return Fact(f"{person}'s favourite colour was {colour}.", f"What was {person}'s favourite colour?", colour)
    if kind == 3:
        return Fact(
            f"{titled} held the secret meeting in the town of {town}.",
            f"In which town did {titled} hold the secret meeting?",
            town,
        )
    if kind == 4:
        n, animals = str(rng.randint(13, 97)), rng.choice(ANIMALS)
        return Fact(
            f"{person} kept exactly {n} {animals} on the farm.", f"How many {animals} did {person} keep on the farm?", n
        )
    if kind == 5:
        code = str(rng.randint(1000, 9999))
        return Fact(
            f"The code to the vault of the {town} bank was {code}.",
            f"What was the code to the vault of the {town} bank?",
            code,
        )
    if kind == 6:
        ship = f"{rng.choice(WORDS).title()} {rng.choice(WORDS).title()}"
        return Fact(f"{titled}'s ship was called the {ship}.", f"What was {titled}'s ship called?", ship)
    if kind == 7:
        year = str(rng.randint(1703, 1889))
        return Fact(f"{person} was born in the year {year}.", f"In which year was {person} born?", year)
    if kind == 8:
        pet = rng.choice(PETS)
        return Fact(f"{person}'s dog was named {pet}.", f"What was the name of {person}'s dog?", pet)
    obj = rng.choice(OBJECTS)
    return Fact(f"{person} gave the {obj} to {titled}.", f"To whom did {person} give the {obj}?", titled)


# --- documents -------------------------------------------------------------------------------
def load_book(path: Path) -> str:
    """Body of a Project Gutenberg text, between its START and END markers (cp1252, CRLF)."""
    text = path.read_bytes().decode("cp1252").replace("\r\n", "\n").replace("\r", "\n")
    start = re.search(r"\*\*\* START OF .*?\*\*\*", text)
    end = re.search(r"\*\*\* END OF ", text)
    return text[start.end() if start else 0 : end.start() if end else len(text)].strip()


# A sentence ends with . ! or ? (maybe closing a quote) and the next begins after whitespace.
_SENTENCE_END = re.compile(r"[.!?][\"'\u201d\u2019]?(?=\s+[\"'\u201c\u2018]?[A-Z])")


@dataclass(frozen=True)
class Case:
    book: str
    text: str
    question: str
    gold: str
    fact: str
    depth: float  # where the fact sits, as a fraction of the document's characters
    doc_tokens: int


class Books:
    """The novels of a folder, with each token's character offset, to cut token-exact windows from."""

    def __init__(self, tokenizer, books_dir: Path):
        self.tokenizer = tokenizer
        self.texts = {p.name: load_book(p) for p in sorted(books_dir.glob("*.txt"))}
        self.offsets = {name: token_starts(text, tokenizer) for name, text in self.texts.items()}
        self.names = sorted(self.texts)

    def tokens(self, text: str) -> int:
        return len(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def window(self, rng: random.Random, name: str, span: int) -> tuple[str, list[int]]:
        """`span` tokens of book `name` from a random start, and its sentence boundaries."""
        starts = self.offsets[name]
        first = rng.randrange(len(starts) - span - 1)
        window = self.texts[name][starts[first] : starts[first + span]]
        return window, [m.end() for m in _SENTENCE_END.finditer(window)]


def build_cases(tokenizer, books_dir: Path, n: int, doc_tokens: int, seed: int) -> list[Case]:
    rng = random.Random(seed)
    books = Books(tokenizer, books_dir)
    cases = []
    while len(cases) < n:
        name = rng.choice(books.names)
        fact = make_fact(rng)
        # The window leaves room for the planted sentence so the whole document is ~doc_tokens.
        window, bounds = books.window(rng, name, doc_tokens - books.tokens(" " + fact.sentence))
        # The fact must be the only way to the answer: neither the question nor the text may hold it.
        gold = normalize(fact.gold)
        if not bounds or gold in normalize(fact.question) or gold in normalize(window):
            continue
        at = rng.choice(bounds)
        text = window[:at] + " " + fact.sentence + window[at:]
        cases.append(Case(name, text, fact.question, fact.gold, fact.sentence, at / len(window), books.tokens(text)))
    return cases


@dataclass(frozen=True)
class Document:
    """A window of one novel with several planted facts: one question per fact, read together."""

    book: str
    text: str
    facts: list[Fact]
    doc_tokens: int


def build_documents(
    tokenizer, books_dir: Path, n: int, facts_per_doc: int, doc_tokens: int, seed: int
) -> list[Document]:
    """n documents of ~doc_tokens tokens, each with facts_per_doc facts planted at distinct
    sentence boundaries (spread over the document), none of whose answers the window holds."""
    rng = random.Random(seed)
    books = Books(tokenizer, books_dir)
    docs = []
    while len(docs) < n:
        name = rng.choice(books.names)
        facts = [make_fact(rng) for _ in range(facts_per_doc)]
        golds = [normalize(f.gold) for f in facts]
        planted = sum(books.tokens(" " + f.sentence) for f in facts)
        window, bounds = books.window(rng, name, doc_tokens - planted)
        questions = " ".join(normalize(f.question) for f in facts)
        if (
            len(bounds) < facts_per_doc
            or len(set(golds)) < facts_per_doc
            or any(g in questions or g in normalize(window) for g in golds)
        ):
            continue
        # One fact per equal slice of the sentence boundaries, so they land all over the document.
        slices = [
            bounds[i * len(bounds) // facts_per_doc : (i + 1) * len(bounds) // facts_per_doc]
            for i in range(facts_per_doc)
        ]
        points = sorted(rng.choice(s) for s in slices)
        text, last = "", 0
        for at, fact in zip(points, facts):
            text += window[last:at] + " " + fact.sentence
            last = at
        text += window[last:]
        docs.append(Document(name, text, facts, books.tokens(text)))
    return docs


# --- scoring ---------------------------------------------------------------------------------
def normalize(text: str) -> str:
    """Lowercase, drop punctuation and articles, collapse whitespace (SQuAD-style)."""
    text = "".join(c for c in text.lower() if c not in string.punctuation + "\u2018\u2019\u201c\u201d")
    text = re.sub(r"\b(a|an|the)\b", " ", text)
    return " ".join(text.split())


def sub_em(prediction: str, gold: str) -> bool:
    p, g = normalize(prediction), normalize(gold)
    return g in p or (bool(p) and p in g)


def exact_match(prediction: str, gold: str) -> bool:
    return normalize(prediction) == normalize(gold)


# --- running ---------------------------------------------------------------------------------
def run_setting(engine: TransformersEngine, cases: list[Case], chunk_tokens: int, memory_tokens: int) -> dict:
    config = AgentConfig(chunk_tokens=chunk_tokens, memory_tokens=memory_tokens, answer_tokens=64)
    agent = MemoryAgent(engine, config)
    began = time.perf_counter()
    # every case has its own document; read_batch steps them all through chunk k in one engine call
    trajectories = agent.read_batch([(case.question, case.text) for case in cases])
    answers = [t.answer for t in trajectories]
    memories = [t.memories[-1] if t.memories else None for t in trajectories]
    memory_lengths = [t.completions[-2].completion_tokens if t.memories else 0 for t in trajectories]
    seconds = time.perf_counter() - began

    rows = [
        {
            "fact": case.fact,
            "question": case.question,
            "gold": case.gold,
            "book": case.book,
            "depth": round(case.depth, 3),
            "answer": a.answer,
            "sub_em": sub_em(a.answer, case.gold),
            "exact_match": exact_match(a.answer, case.gold),
            "gold_in_memory": normalize(case.gold) in normalize(memory or ""),
            "memory_length": length,
            "memory": memory,
        }
        for case, a, memory, length in zip(cases, answers, memories, memory_lengths)
    ]
    n, doc_tokens = len(rows), sum(case.doc_tokens for case in cases)
    return {
        "chunk_tokens": chunk_tokens,
        "memory_tokens": memory_tokens,
        "sub_em": sum(r["sub_em"] for r in rows) / n,
        "exact_match": sum(r["exact_match"] for r in rows) / n,
        "memory_recall": sum(r["gold_in_memory"] for r in rows) / n,
        "mean_memory_tokens": sum(memory_lengths) / n,
        # A memory that used its whole budget never stopped on its own: usually a loop.
        "memory_at_cap": sum(length >= memory_tokens for length in memory_lengths) / n,
        "seconds": seconds,
        "doc_tokens_per_s": doc_tokens / seconds,
        "cases": rows,
    }


def markdown_table(results: list[dict]) -> str:
    lines = [
        "| chunk x memory | sub-EM | EM | gold in memory | mean memory tok | memory at cap | seconds | doc tok/s |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        lines.append(
            f"| {r['chunk_tokens']}x{r['memory_tokens']} | {r['sub_em']:.1%} | {r['exact_match']:.1%} "
            f"| {r['memory_recall']:.1%} | {r['mean_memory_tokens']:.0f} | {r['memory_at_cap']:.0%} "
            f"| {r['seconds']:.0f} | {r['doc_tokens_per_s']:.0f} |"
        )
    return "\n".join(lines)


def parse_settings(value: str) -> list[tuple[int, int]]:
    try:
        return [(int(c), int(m)) for c, m in (s.split("x") for s in value.split(","))]
    except ValueError:
        raise argparse.ArgumentTypeError("settings look like 256x64,512x128 (chunk x memory tokens)") from None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--settings",
        type=parse_settings,
        default=parse_settings("256x64,512x128,512x256,1024x128,2048x256"),
        help="comma-separated chunk_tokens x memory_tokens pairs",
    )
    parser.add_argument("--facts", type=int, default=40, help="number of planted-fact cases")
    parser.add_argument("--doc-tokens", type=int, default=2048, help="document length in tokens")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--books", type=Path, default=BOOKS, help="folder of Project Gutenberg .txt files")
    parser.add_argument("--model", default="smollm2", help="model folder, or 'smollm2' for the bundled model")
    parser.add_argument("--out", type=Path, default=Path("runs/benchmarks/planted_facts.json"))
    args = parser.parse_args()

    engine = TransformersEngine(model_folder(args.model))
    cases = build_cases(engine.tokenizer, args.books, args.facts, args.doc_tokens, args.seed)
    results = []
    for chunk_tokens, memory_tokens in args.settings:
        results.append(run_setting(engine, cases, chunk_tokens, memory_tokens))
        r = results[-1]
        print(f"{chunk_tokens}x{memory_tokens}: sub-EM {r['sub_em']:.1%} in {r['seconds']:.0f}s", flush=True)
        # Written after every setting so a long run that is cut short keeps what it measured.
        args.out.parent.mkdir(parents=True, exist_ok=True)
        summary = {"model": args.model, "facts": args.facts, "doc_tokens": args.doc_tokens, "seed": args.seed}
        args.out.write_text(json.dumps({**summary, "settings": results}, indent=1))
    print(f"\n{args.facts} planted facts, ~{args.doc_tokens}-token documents, seed {args.seed}\n")
    print(markdown_table(results))


if __name__ == "__main__":
    main()
