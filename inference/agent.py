"""The MemAgent loop (arXiv 2507.02259): read a document chunk by chunk, overwriting a bounded
memory after each chunk, then answer from the final memory.

The agent is stateless: it turns batches of (problem, memory, chunk) into new memories and batches
of (problem, memory) into answers. Whoever drives it (a worker, the CLI, a benchmark) keeps the
state, so many readings can advance in one engine call and resume from any checkpoint.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any, Sequence

from inference.capture import Scorer, Sentence, as_line, assemble, document_spans, first_of_each, render
from inference.chunking import Chunk, split_into_chunks
from inference.dates import dates_not_in
from inference.engines.base import Completion, Engine
from inference.templates import (
    NO_EVIDENCE_MEMORY,
    NO_MEMORY,
    NOT_IN_DOCUMENT,
    NOT_IN_DOCUMENT_NO,
    asks_yes_or_no,
    get_template_set,
)

#: how a reading's memory is written after each chunk (DESIGN.md, "Two memory policies"): `generative`, the model
#: rewrites it (MemAgent's); `extractive`, the best-scored sentences of the old memory and the chunk, verbatim
MEMORY_POLICIES = ("generative", "extractive")


@dataclass(frozen=True)
class AgentConfig:
    # MemAgent's own sizes and prompt order (its 7B/14B models): this package stands alone, so its default is
    # the method's. The app never relies on it: app/services/reading_config.py decides what a reading gets.
    chunk_tokens: int = 5000
    memory_tokens: int = 1024
    answer_tokens: int = 1024
    template_set: str = "memagent"
    memory_policy: str = "generative"

    def __post_init__(self) -> None:
        for field in ("chunk_tokens", "memory_tokens", "answer_tokens"):
            if getattr(self, field) < 1:
                raise ValueError(f"{field} must be a positive number of tokens")
        get_template_set(self.template_set)
        if self.memory_policy not in MEMORY_POLICIES:
            raise ValueError(f"unknown memory policy {self.memory_policy!r}; choose from {', '.join(MEMORY_POLICIES)}")

    @property
    def whole_sentences(self) -> bool:
        """Whether chunks end between sentences: a memory of verbatim sentences must not keep a cut one."""
        return self.memory_policy == "extractive"

    @classmethod
    def of(cls, source: Any) -> AgentConfig:
        """The sizes, template set and memory policy of anything that carries them: a reading, a training config,
        settings (these have no policy of their own: a model version decides it, else the method's)."""
        policy = getattr(source, "memory_policy", None) or "generative"
        return cls(source.chunk_tokens, source.memory_tokens, source.answer_tokens, source.template_set, policy)


@dataclass(frozen=True)
class Answer:
    answer: str  # the content of the last \boxed{}, or the whole output when there is none
    output: str  # what the model wrote
    completion: Completion


@dataclass
class Trajectory:
    """One whole reading: a conversation per chunk (the memory it wrote) and the final one.
    `messages[i]` is the user message that produced `completions[i]`; the last pair is the answer."""

    problem: str
    messages: list[str]
    completions: list[Completion]
    answer: Answer | None = None

    @property
    def memories(self) -> list[str]:
        return [c.text for c in self.completions[: len(self.completions) - (self.answer is not None)]]


def memory_of(output: str) -> str:
    """The memory a rewrite leaves: what the model wrote, each line once. The small trained readers
    write their fact line again and again (9 of the 2026-11-23 reader's 32 held-out final memories at
    2K and 8K held a line more than once; 18 of 32, up to 9 times, after more RL), and each copy is
    decoded again at every later chunk. Dropping them left that reader's held-out 2K answers unchanged
    (the same 14 of 32) and cut the tokens it generated for 8 questions on a 4,415-token excerpt by
    32% (README).

    A phrase looping within a line is kept once, without the copy the token cap cut off: an SFT round in
    1024-token chunks (2026-11-27) looped to the 128-token cap on one of the throughput benchmark's open
    questions ("…, and very eccentric, and very eccentric, …"). What is stored and read at the next chunk
    is then the sentence; the time is not saved, as that reader looped again there (README, "Speed").

    >>> memory_of("The code is 42.\\nThe code is 42. \\n\\nDogs bark.\\nThe code is 42.")
    'The code is 42.\\n\\nDogs bark.'
    >>> memory_of("In the old, worn-out, and very odd, and very odd, and very odd, and ve")
    'In the old, worn-out, and very odd'
    """
    seen: set[str] = set()
    kept = []
    for line in output.split("\n"):
        key = line.strip()
        if key and key in seen:
            continue
        seen.add(key)
        kept.append(_unlooped(line))
    return "\n".join(kept)


# a phrase of 8 or more characters three or more times in a row
_LOOP = re.compile(r"(.{8,}?)\1{2,}")


def _unlooped(line: str) -> str:
    start = 0
    while (m := _LOOP.search(line, start)) is not None:
        phrase, rest = m.group(1), line[m.end() :]
        if " " not in phrase.strip():  # a run of digits or dashes, not a looping sentence
            start = m.start() + 1
            continue
        line = line[: m.start()] + phrase + ("" if phrase.startswith(rest) else rest)
        start = m.start() + len(phrase)
    return line


def holds_nothing(memory: str | None) -> bool:
    """Whether a memory is the trained reader's empty one (`NO_EVIDENCE_MEMORY`): a reading ending with it
    is answered `NOT_IN_DOCUMENT` without the model (`MemoryAgent.answer`). Case, spacing and the full stop
    do not matter: sampled at T 1.0 the reader wrote "No Relevant Information Yet." and the model, asked,
    answered a clause question "Yes." from it.

    >>> holds_nothing("No relevant information yet.\\n"), holds_nothing(None), holds_nothing("The code is 42.")
    (True, False, False)
    >>> holds_nothing("No Relevant Information  Yet"), holds_nothing("No relevant information yet. The code is 42.")
    (True, False)
    """
    return _plain(memory or "") == _plain(NO_EVIDENCE_MEMORY)


def _plain(text: str) -> str:
    return " ".join(text.split()).rstrip(".").casefold()


_BOXED = "\\boxed{"


def extract_boxed(text: str) -> str | None:
    """Content of the last complete `\\boxed{...}` in `text`, braces balanced; None if there is none."""
    start = text.rfind(_BOXED)
    while start != -1:
        depth, i = 1, start + len(_BOXED)
        while i < len(text):
            if text[i] == "{":
                depth += 1
            elif text[i] == "}":
                depth -= 1
                if depth == 0:
                    return text[start + len(_BOXED) : i].strip()
            i += 1
        start = text.rfind(_BOXED, 0, start)  # unclosed: try an earlier one
    return None


#: for a yes/no question, the extractive memory keeps a sentence whose relevance log-odds reach this (set on the
#: dev split: see docs/experiments/2026-12-06-relevance-scorer.md); below it, the memory stays empty and the
#: question is answered "No" without the model
KEEP_THRESHOLD = -2.0
#: for an open question ("Who…", "What is the name…"), a far lower bar: the scorer has seen contracts' questions,
#: not a novel's, and puts a novel's evidence below -2 as often as not; with -2 the dev book questions' evidence
#: reached the final memory for 44.7%, with this 51.3%, and contracts' for 72.1% against 74.9%. Abstaining did not
#: move: the memories of the 32 dev questions about a fact the document lacks kept something with either bar
#: (docs/experiments/2026-12-06-document-words.md)
OPEN_KEEP_THRESHOLD = -4.0


def keep_threshold(question: str, yes_no: float = KEEP_THRESHOLD, open_: float = OPEN_KEEP_THRESHOLD) -> float:
    """The score a sentence must reach to be kept for `question`: a yes/no question's bar or an open one's (the
    capture probe passes other values to try them)."""
    return yes_no if asks_yes_or_no(question) else open_


#: and only sentences within this many log-odds of the memory's best: the small reader answers with every
#: look-alike its memory holds ("Vanponpith; Brairrounpul"), wrong under strict scoring. Set on the dev split: with
#: 1.0, 30 of 32 planted facts were answered right, 24 with 2.0 and 22 with none; contracts and clauses held
#: (same record)
KEEP_MARGIN = 1.0


class MemoryAgent:
    def __init__(
        self, engine: Engine, config: AgentConfig | None = None, shift_tokens: int = 0, scorer: Scorer | None = None
    ):
        self.engine = engine
        self.config = config or AgentConfig()
        self.templates = get_template_set(self.config.template_set)
        #: every chunk boundary moved this many tokens later (`longread eval --shift-tokens`: robustness)
        self.shift_tokens = shift_tokens
        #: the extractive policy's sentence scorer (default: the shipped relevance weights, loaded on first use)
        self.scorer = scorer
        self._counted: dict[str, int] = {}

    def chunks(self, text: str) -> list[Chunk]:
        return split_into_chunks(
            text, self.engine.tokenizer, self.config.chunk_tokens, self.shift_tokens, self.config.whole_sentences
        )

    def update_messages(self, items: Sequence[tuple[str, str | None, str]]) -> list[str]:
        return [
            self.templates.render_update(problem, NO_MEMORY if memory is None else memory, chunk)
            for problem, memory, chunk in items
        ]

    def final_messages(self, items: Sequence[tuple[str, str | None]]) -> list[str]:
        return [
            self.templates.render_final(problem, NO_MEMORY if memory is None else memory) for problem, memory in items
        ]

    def update(
        self,
        items: Sequence[tuple[str, str | None, str]],
        temperature: float = 0.0,
        documents: Sequence[str] | None = None,
    ) -> list[Completion]:
        """One memory rewrite per (problem, memory or None for the first chunk, chunk text). A
        completion's `text` is the new memory (`memory_of` what the model wrote); its token counts
        and ids are what was generated (what the runner counts and training trains on). Under the extractive
        policy nothing is generated: see `extract`, which reads `documents` (each item's whole text)."""
        if self.config.memory_policy == "extractive":
            return self.extract(items, documents)
        return self._rewrite(self.update_messages(items), temperature)

    def extract(
        self, items: Sequence[tuple[str, str | None, str]], documents: Sequence[str] | None = None
    ) -> list[Completion]:
        """The extractive memory: the old memory's lines and the chunk's sentences, each scored for the question;
        the best of them whose score reaches `KEEP_THRESHOLD` (`OPEN_KEEP_THRESHOLD` for an open question),
        verbatim, one a line, within `memory_tokens`, the best first and none below the best by more than
        `KEEP_MARGIN`: the small reader answers from a memory's first lines (in reading order, the memory held the
        gold for all 20 of the 32 dev planted facts it missed, and for 17 of them a look-alike came first;
        docs/experiments/2026-12-06-relevance-scorer.md). A sentence's score depends on its text and its document
        alone (`documents[i]`, the whole text item i's chunk is part of: the scorer weighs a question's words by
        how rare they are in it), so an old line scores as when it was kept.
        A memory that keeps nothing is `NO_EVIDENCE_MEMORY`. A person's pinned lines are the caller's to keep
        (the runner puts back what a rewrite drops, whichever policy wrote it)."""
        if self.scorer is None:
            from inference.relevance import RelevanceScorer

            self.scorer = RelevanceScorer.shipped()
        docs = list(documents) if documents is not None else [None] * len(items)
        # A pass's questions share a chunk: its sentences and their memory lines, once.
        split: dict[str, tuple[list[str], list[str]]] = {}
        out = []
        for (problem, memory, chunk), doc in zip(items, docs, strict=True):
            if chunk not in split:
                sentences = [chunk[a:b] for a, b in document_spans(chunk)]
                split[chunk] = sentences, [as_line(x) for x in sentences]
            sentences, lines = split[chunk]
            old = [] if memory is None or holds_nothing(memory) else [x for x in memory.split("\n") if x.strip()]
            both = old + sentences
            texts = [both[i] for i in first_of_each([*map(as_line, old), *lines])]
            counts = self._token_counts(texts)
            scores = self.scorer.score(texts, [problem], doc)[0]
            candidates = [Sentence(t, i, i + 1, s, n) for i, (t, s, n) in enumerate(zip(texts, scores, counts))]
            bar = keep_threshold(problem)
            kept = sorted(assemble([], candidates, self.config.memory_tokens, bar), key=lambda s: -s.score)
            kept = [s for s in kept if s.score >= kept[0].score - KEEP_MARGIN]
            out.append(Completion(render(kept) or NO_EVIDENCE_MEMORY, sum(counts), 0))
        return out

    def _token_counts(self, texts: list[str]) -> list[int]:
        """Each text's tokens, counted once an agent: a memory's kept lines come back at every later chunk."""
        missing = [t for t in dict.fromkeys(texts) if t not in self._counted]
        if missing:
            if len(self._counted) > 1 << 17:  # an agent that reads many documents (evaluation) starts afresh
                self._counted.clear()
            ids = self.engine.tokenizer(missing, add_special_tokens=False)["input_ids"]
            self._counted.update(zip(missing, map(len, ids)))
        return [self._counted[t] for t in texts]

    def _rewrite(self, messages: list[str], temperature: float) -> list[Completion]:
        completions = self.engine.generate(messages, self.config.memory_tokens, temperature)
        return [replace(c, text=memory_of(c.text)) for c in completions]

    def answer(self, items: Sequence[tuple[str, str | None]], temperature: float = 0.0) -> list[Answer]:
        """The answers from the final memories. A reading that ends holding nothing (`NO_EVIDENCE_MEMORY`)
        answers `NOT_IN_DOCUMENT` without asking the model: whatever it wrote would rest on nothing the
        reading found. The trained reader invented such answers ("Eleanor", "A,B,C,…,Z" in 57 tokens, which
        the other questions of a lockstep pass waited for; README, "Speed"). A yes/no question read to the end
        with nothing found is answered `NOT_IN_DOCUMENT_NO`: the clause asked about is not there.
        An answer naming a date its final memory does not hold is answered the same way: the memory is all
        the answer step sees, so the date was made up. The shipped reader answered "12/15/18" to 6 of 42
        dev contract questions, each time with no date in its memory; the rule changed 9 answers there and 8
        held out, none of them right (docs/experiments/2026-12-03-invented-dates.md)."""
        decided = [self._decided(question, memory) for question, memory in items]
        asked = [item for item, known in zip(items, decided) if known is None]
        completions = iter(
            self.engine.generate(self.final_messages(asked), self.config.answer_tokens, temperature) if asked else []
        )
        answers = []
        for (question, memory), known in zip(items, decided):
            c = Completion(f"\\boxed{{{known}}}", 0, 0) if known is not None else next(completions)
            boxed = extract_boxed(c.text)
            text = boxed if boxed is not None else c.text.strip()
            silent = NOT_IN_DOCUMENT_NO if asks_yes_or_no(question) else NOT_IN_DOCUMENT
            answers.append(Answer(silent if dates_not_in(text, memory or "") else text, c.text, c))
        return answers

    def _decided(self, question: str, memory: str | None) -> str | None:
        """The answer a final memory gives without the model, or None. Nothing kept: the document does not say
        (for a yes/no question, "No"). Under the extractive policy a yes/no question's memory holds only
        sentences that scored above the keep bar, so a kept sentence is its "Yes": the answer step said "Yes"
        to all 103 dev clause questions whose memory kept one (docs/experiments/2026-12-07-yes-by-capture.md),
        and a review's 33 yes/no questions then need no answer call."""
        if holds_nothing(memory):
            return NOT_IN_DOCUMENT_NO if asks_yes_or_no(question) else NOT_IN_DOCUMENT
        if self.config.memory_policy == "extractive" and asks_yes_or_no(question):
            return "Yes"
        return None

    def read_batch(self, items: Sequence[tuple[str, str]], temperature: float = 0.0) -> list[Trajectory]:
        """Read many (problem, document text) pairs in lockstep, whatever their lengths: step k is one
        batched call for every item that has a chunk k; then one call answers them all (several
        questions on one text: pass the same string, chunked once). Keeps every
        message and completion (evaluation reads the answers, training the whole conversations)."""
        chunked: dict[int, list[Chunk]] = {}
        trajectories = [Trajectory(problem, [], []) for problem, _ in items]
        plans = []
        for _, text in items:
            if id(text) not in chunked:
                chunked[id(text)] = self.chunks(text)
            plans.append(chunked[id(text)])
        for k in range(max((len(p) for p in plans), default=0)):
            active = [i for i, plan in enumerate(plans) if k < len(plan)]
            batch = [(items[i][0], _last_memory(trajectories[i]), plans[i][k].text(items[i][1])) for i in active]
            messages = self.update_messages(batch)
            extractive = self.config.memory_policy == "extractive"
            documents = [items[i][1] for i in active]
            completions = self.extract(batch, documents) if extractive else self._rewrite(messages, temperature)
            for i, message, completion in zip(active, messages, completions):
                trajectories[i].messages.append(message)
                trajectories[i].completions.append(completion)
        finals = [(t.problem, _last_memory(t)) for t in trajectories]
        messages = self.final_messages(finals)
        for t, message, answer in zip(trajectories, messages, self.answer(finals, temperature)):
            t.messages.append(message)
            t.completions.append(answer.completion)
            t.answer = answer
        return trajectories


def _last_memory(t: Trajectory) -> str | None:
    return t.completions[-1].text if t.completions else None
