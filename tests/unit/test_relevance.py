"""The extractive memory's learned sentence scorer (inference/relevance.py) and its trainer
(training/relevance_train.py), and the agent's extractive update (inference/agent.py: MemoryAgent.extract)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from inference.agent import KEEP_MARGIN, KEEP_THRESHOLD, OPEN_KEEP_THRESHOLD, AgentConfig, MemoryAgent
from inference.capture import LexicalScorer, document_spans
from inference.relevance import SIZE, Question, RelevanceScorer, SentenceHalf, document_words, features
from inference.templates import NO_EVIDENCE_MEMORY, NOT_IN_DOCUMENT_NO
from tests.fakes import FakeEngine
from training.relevance_train import AdaGrad, contract_examples

LAW = "Which state's or country's law governs this agreement?"
CONTRACT = (
    "DISTRIBUTION AGREEMENT. This Agreement is made between Acme Corp. and Beta LLC. "
    "The Distributor shall keep accurate records of all sales. "
    "This Agreement shall be governed by and construed under the laws of the State of Ohio. "
    "Either party may terminate this Agreement on ninety days' notice. "
    "Notices shall be sent to the addresses set out above."
)


def test_features_are_the_same_in_every_process():
    """The hash is crc32, not Python's per-process hash(): weights trained in one process score in another."""
    idx, _ = features(Question(LAW), SentenceHalf("governed by the laws of Ohio"))
    code = (
        "from inference.relevance import Question, SentenceHalf, features;"
        f"print(features(Question({LAW!r}), SentenceHalf('governed by the laws of Ohio'))[0].tolist())"
    )
    other = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert other.stdout.strip() == str(idx.tolist())
    assert idx.min() >= 0 and idx.max() < SIZE


def test_a_word_in_every_sentence_of_the_document_weighs_less_than_a_rare_one():
    """In a novel the heroine's name is in every other sentence: the sentence that holds the question's rare word
    ("pension") shares more of the question, weighed by the document, than one holding her name, though both hold
    one word of it."""
    document = "Lucy walked in. Lucy ran home. The pension was cheap. Lucy slept late."
    q = Question("Which pension did Lucy like?", document_words(document))
    assert q.weights["lucy"] < q.weights["pensi"] < q.weights["like"]  # "like": in no sentence
    _, common = features(q, SentenceHalf("Lucy ran home."))
    _, rare = features(q, SentenceHalf("The pension was cheap."))
    assert common[-2] == rare[-2] == pytest.approx(1 / 3)  # plain overlap: one of three words each
    assert rare[-1] > common[-1] > 0
    _, flat = features(Question("Which pension did Lucy like?"), SentenceHalf("Lucy ran home."))
    assert flat[-1] == flat[-2]  # without a document every word weighs the same


def test_scoring_a_chunk_sums_the_weights_of_each_pairs_features():
    """The scorer sums every sentence's weights in a few array operations; training sees `features` a pair at a
    time: both must give the same score, with the shipped weights, for every sentence and question."""
    scorer = RelevanceScorer.shipped()
    sentences = [CONTRACT[a:b] for a, b in document_spans(CONTRACT)] + ["", "Ohio"]
    questions = [LAW, "Is there a non-compete clause?", "Who are the parties?", "the"]
    words = document_words(CONTRACT)
    pairwise = [
        [float(scorer.weights[i] @ v) for i, v in (features(Question(q, words), SentenceHalf(s)) for s in sentences)]
        for q in questions
    ]
    assert len({round(x, 3) for row in pairwise for x in row}) > 10  # the scores differ: a real check
    assert scorer.score(sentences, questions, CONTRACT) == [pytest.approx(row, abs=1e-5) for row in pairwise]
    assert scorer.score([], questions, CONTRACT) == [[] for _ in questions]


def test_a_few_contracts_teach_the_governing_law_clause_over_its_look_alikes(tmp_path):
    """Trained on other contracts' marked clauses, the scorer puts an unseen contract's governing-law clause first,
    above the sentences that share the question's words ("this agreement"), as word overlap does not."""
    qa = [{"question": LAW, "evidence": ["governed by and construed under the laws of the State of Ohio"]}]
    states = ["Ohio", "Texas", "Delaware", "New York", "Nevada", "Iowa", "Utah", "Maine"]
    opt, rng = AdaGrad(lr=0.5, l2=0.0), np.random.default_rng(0)
    for _ in range(5):
        for state in states:
            text, ev = CONTRACT.replace("Ohio", state), qa[0]["evidence"][0].replace("Ohio", state)
            opt.step(list(contract_examples(text, [{"question": LAW, "evidence": [ev]}], rng, hard=2, easy=2)))
    trained = RelevanceScorer(opt.w.astype(np.float32))
    unseen = [
        "This Agreement may be signed in counterparts.",
        "This Agreement is governed by the laws of the Commonwealth of Virginia.",
        "The state of the goods on delivery is the Buyer's risk.",
    ]
    scores = trained.score(unseen, [LAW])[0]
    assert int(np.argmax(scores)) == 1
    lexical = LexicalScorer().score(unseen, [LAW])[0]
    assert lexical[2] >= lexical[1]  # "state" and "governs" weigh alike to word overlap: the look-alike ties or wins

    trained.save(tmp_path / "weights.npz")
    assert RelevanceScorer.load(tmp_path / "weights.npz").score(unseen, [LAW])[0] == pytest.approx(scores, abs=5e-2)


class _WordScorer:
    """Scores a sentence by the words it holds: the agent's logic without a trained model."""

    def __init__(self, word: str, weaker: str = "", weaker_score: float = 1.5) -> None:
        self.word, self.weaker, self.weaker_score = word, weaker, weaker_score

    def score(self, chunk, questions, document=None):
        def one(s: str) -> float:
            return 3.0 if self.word in s else self.weaker_score if self.weaker and self.weaker in s else -5.0

        return [[one(s) for s in chunk] for _ in questions]


def test_the_extractive_memory_keeps_scored_sentences_verbatim_and_generates_nothing(tokenizer):
    engine = FakeEngine(tokenizer, lambda m: "\\boxed{never asked}")
    config = AgentConfig(
        chunk_tokens=40, memory_tokens=64, answer_tokens=16, template_set="memagent", memory_policy="extractive"
    )
    agent = MemoryAgent(engine, config, scorer=_WordScorer("Ohio"))
    first = agent.update([(LAW, None, CONTRACT)])[0]
    assert first.text == "This Agreement shall be governed by and construed under the laws of the State of Ohio."
    assert first.completion_tokens == 0 and engine.calls == []
    # the kept line competes with the next chunk's sentences; a chunk with nothing relevant changes nothing
    assert agent.update([(LAW, first.text, "Payment is due in thirty days.")])[0].text == first.text
    # a chunk with nothing relevant and no memory: the empty memory, and a yes/no question is answered without the model
    nothing = agent.update([("Is there a non-compete clause?", None, "Payment is due in thirty days.")])[0]
    assert nothing.text == NO_EVIDENCE_MEMORY
    (answer,) = agent.answer([("Is there a non-compete clause?", nothing.text)])
    assert answer.answer == NOT_IN_DOCUMENT_NO and engine.calls == []


def test_a_kept_clause_is_the_extractive_readers_yes_and_only_other_questions_ask_the_model(tokenizer):
    """Under the extractive policy a yes/no question's memory holds only sentences above the keep bar: a kept one
    answers "Yes" without the model, as an empty memory answers "No". An open question is still answered by the
    model, and so is a yes/no question under the generative policy, whose memory the model wrote."""
    engine = FakeEngine(tokenizer, lambda m: "\\boxed{Ohio}")
    sizes = dict(chunk_tokens=40, memory_tokens=64, answer_tokens=16, template_set="memagent")
    extractive = MemoryAgent(engine, AgentConfig(**sizes, memory_policy="extractive"), scorer=_WordScorer("Ohio"))
    clause = "Is there a governing law clause? Answer yes or no."
    kept = "This Agreement shall be governed by the laws of the State of Ohio."
    (yes, law) = extractive.answer([(clause, kept), (LAW, kept)])
    assert yes.answer == "Yes" and yes.completion.completion_tokens == 0
    assert law.answer == "Ohio" and [len(messages) for messages, _ in engine.calls] == [1]  # only the open question
    assert LAW in engine.calls[0][0][0]
    (asked,) = MemoryAgent(engine, AgentConfig(**sizes)).answer([(clause, kept)])
    assert asked.answer == "Ohio" and len(engine.calls) == 2  # the generative reader's memory is the model's


def test_the_extractive_memory_stays_within_its_budget_best_first(tokenizer):
    lines = [f"Clause {i}: the laws of Ohio apply to part {i} of the work done here." for i in range(12)]
    engine = FakeEngine(tokenizer, lambda m: "")
    config = AgentConfig(
        chunk_tokens=400, memory_tokens=60, answer_tokens=16, template_set="memagent", memory_policy="extractive"
    )
    memory = MemoryAgent(engine, config, scorer=_WordScorer("Ohio")).update([(LAW, None, " ".join(lines))])[0].text
    kept = memory.split("\n")
    assert 1 < len(kept) < len(lines) and all(line in lines for line in kept)
    assert len(tokenizer(memory, add_special_tokens=False)["input_ids"]) <= 60


def test_the_extractive_memory_keeps_the_best_first_and_no_look_alike_far_below_it(tokenizer):
    """The small reader answers from the first lines and names every look-alike it sees: the best line comes first,
    and a line scoring more than `KEEP_MARGIN` below it is not kept, though it reaches the threshold."""
    engine = FakeEngine(tokenizer, lambda m: "")
    config = AgentConfig(
        chunk_tokens=400, memory_tokens=100, answer_tokens=16, template_set="memagent", memory_policy="extractive"
    )
    chunk = "The code of Ann is 1. The code of Bob is 2. Rain fell."
    memory = MemoryAgent(engine, config, scorer=_WordScorer("Bob", weaker="code")).update([("Bob?", None, chunk)])
    assert KEEP_MARGIN < 3.0 - 1.5 and 1.5 > KEEP_THRESHOLD
    assert memory[0].text == "The code of Bob is 2."
    close = _WordScorer("Bob", weaker="Ann", weaker_score=2.5)
    both = MemoryAgent(engine, config, scorer=close).update([("Bob?", None, chunk)])[0].text
    assert both.split("\n") == ["The code of Bob is 2.", "The code of Ann is 1."]  # within the margin: best first


def test_an_open_question_keeps_a_sentence_a_yes_or_no_question_would_pass_over(tokenizer):
    """A sentence scoring between the two bars: kept for "Who…?" (a novel's evidence often scores that low), not
    for "Is there…?", whose empty memory is answered "No"."""
    engine = FakeEngine(tokenizer, lambda m: "")
    config = AgentConfig(
        chunk_tokens=400, memory_tokens=100, answer_tokens=16, template_set="memagent", memory_policy="extractive"
    )
    low = (KEEP_THRESHOLD + OPEN_KEEP_THRESHOLD) / 2
    agent = MemoryAgent(engine, config, scorer=_WordScorer("nothing", weaker="Ann", weaker_score=low))
    chunk = "The code of Ann is 1. Rain fell."
    (open_,) = agent.update([("Whose code is 1?", None, chunk)])
    (yes_no,) = agent.update([("Is there a code of Ann?", None, chunk)])
    assert open_.text == "The code of Ann is 1." and yes_no.text == NO_EVIDENCE_MEMORY


def test_the_scorer_reads_the_whole_document_each_chunk_is_part_of(tokenizer):
    """The agent hands every chunk's document to the scorer, for the old memory's lines as for the chunk's."""
    seen = []

    class Recording(_WordScorer):
        def score(self, chunk, questions, document=None):
            seen.append(document)
            return super().score(chunk, questions, document)

    engine = FakeEngine(tokenizer, lambda m: "")
    config = AgentConfig(
        chunk_tokens=40, memory_tokens=64, answer_tokens=16, template_set="memagent", memory_policy="extractive"
    )
    (trajectory,) = MemoryAgent(engine, config, scorer=Recording("Ohio")).read_batch([(LAW, CONTRACT)])
    assert len(trajectory.completions) > 1 and seen and all(d == CONTRACT for d in seen)


def test_an_unknown_memory_policy_is_refused():
    with pytest.raises(ValueError, match="unknown memory policy 'free'"):
        AgentConfig(memory_policy="free")


def test_a_reading_is_scored_in_one_call_a_chunk_and_each_text_counted_once(tokenizer):
    """A reading's kept lines are scored with its chunk's sentences in one call (not a call for the chunk and one
    for the memory), and the agent counts a text's tokens once however often it comes back."""
    calls, counted = [], []

    class Recording(_WordScorer):
        def score(self, chunk, questions, document=None):
            calls.append((list(chunk), list(questions)))
            return super().score(chunk, questions, document)

    class Counting:
        def __getattr__(self, name):
            return getattr(tokenizer, name)

        def __call__(self, texts, **kwargs):
            counted.extend(texts if isinstance(texts, list) else [texts])
            return tokenizer(texts, **kwargs)

    engine = FakeEngine(Counting(), lambda m: "")
    config = AgentConfig(
        chunk_tokens=400, memory_tokens=64, answer_tokens=16, template_set="memagent", memory_policy="extractive"
    )
    agent = MemoryAgent(engine, config, scorer=Recording("Ohio"))
    chunk = "The laws of Ohio apply. Rain fell."
    law, note = agent.update([(LAW, None, chunk), ("Is Ohio named?", None, chunk)])
    assert law.text == note.text == "The laws of Ohio apply." and len(calls) == 2
    again = agent.update([(LAW, law.text, "Payment is due. Rain fell.")])[0]
    assert calls[-1] == (["The laws of Ohio apply.", "Payment is due.", "Rain fell."], [LAW]) and len(calls) == 3
    assert again.text == law.text
    assert sorted(counted) == sorted(set(counted)) == ["Payment is due.", "Rain fell.", "The laws of Ohio apply."]


def test_a_sentence_the_document_repeats_is_kept_once(tokenizer):
    """A kept sentence that a later chunk repeats (a PDF may wrap it differently) takes one line of the memory, not
    two: the budget a copy would spend goes to the next best sentence."""
    config = AgentConfig(
        chunk_tokens=400, memory_tokens=64, answer_tokens=16, template_set="memagent", memory_policy="extractive"
    )
    agent = MemoryAgent(FakeEngine(tokenizer, lambda m: ""), config, scorer=_WordScorer("Ohio"))
    first = agent.update([(LAW, None, "The laws of Ohio apply. Rain fell.")])[0]
    assert first.text == "The laws of Ohio apply."
    again = agent.update(
        [(LAW, first.text, "The laws of\nOhio apply. Ohio courts hear disputes. The laws of Ohio apply.")]
    )
    assert again[0].text.split("\n") == ["The laws of Ohio apply.", "Ohio courts hear disputes."]
