"""The extractive memory policy's core (inference/capture.py): sentence pieces of a chunk, the memory kept within
its budget, and the pointer scorer's read-out (inference/capture_scorer.py) against a brute-force computation on a
tiny random Llama."""

from __future__ import annotations

import doctest
import math

import pytest

from inference import capture
from inference.capture import LexicalScorer, Sentence, assemble, chunk_spans, document_spans, pin, render


def test_doctests():
    assert doctest.testmod(capture).failed == 0


def test_document_spans_cut_long_sentences_at_whitespace_and_keep_every_word():
    text = "Short one. " + " ".join(f"Word{i}" for i in range(200)) + "."
    spans = document_spans(text, max_chars=100)
    assert all(b - a <= 100 for a, b in spans)
    assert " ".join(text[a:b] for a, b in spans).split() == text.split()
    assert text[slice(*spans[0])] == "Short one."


def test_chunk_spans_clip_at_the_chunk_and_merge_down_to_the_most():
    spans = [(i * 3, i * 3 + 2) for i in range(10)]
    assert chunk_spans(spans, 4, 10) == [(4, 5), (6, 8), (9, 10)]
    merged = chunk_spans(spans, 0, 30, most=4)
    assert len(merged) == 4 and merged[0][0] == 0 and merged[-1][1] == 29


def _s(text: str, start: int, score: float, tokens: int = 10) -> Sentence:
    return Sentence(text, start, start + len(text), score, tokens)


def test_assemble_keeps_the_best_within_budget_in_document_order():
    old = [_s("old good", 0, 5.0), _s("old poor", 20, -1.0)]
    new = [_s("new best", 40, 9.0), _s("new mid", 60, 1.0), _s("new long", 80, 4.0, tokens=30)]
    kept = assemble(old, new, memory_tokens=33)  # three of 11 tokens fit; the long one is passed over
    assert [s.text for s in kept] == ["old good", "new best", "new mid"]
    assert [s.start for s in kept] == sorted(s.start for s in kept)


def test_assemble_threshold_can_keep_nothing():
    assert assemble([], [_s("a", 0, 0.1), _s("b", 5, 0.2)], 100, threshold=0.5) == []


def test_pinned_lines_stay_first_whatever_they_score():
    pinned = pin(["Governing Law: Texas."], count=lambda t: 5)
    kept = assemble(pinned, [_s("x", 0, 9.0, tokens=5), _s("y", 9, 8.0, tokens=5)], memory_tokens=12)
    assert kept[0].pinned and kept[0].start is None
    assert [s.text for s in kept] == ["Governing Law: Texas.", "x"]
    assert render(kept) == "Governing Law: Texas.\nx"


def test_render_puts_a_wrapped_sentence_on_one_line():
    assert render([Sentence("The term\n  is five\nyears.", 0, 23)]) == "The term is five years."


def test_lexical_scorer_prefers_the_sentence_with_the_question_words():
    scores = LexicalScorer().score(
        ["The sun shone.", "This Agreement is governed by the laws of Ohio."], ["Which law governs this agreement?"]
    )
    assert scores[0][1] > scores[0][0] == 0.0


torch = pytest.importorskip("torch")


def test_pointer_scores_are_log_odds_against_none_over_all_labels():
    from inference.capture_scorer import pointer_scores

    torch.manual_seed(0)
    for n in (3, 10, 15, 37, 99):
        first, second = torch.randn(10), torch.randn(9, 11)
        scores = pointer_scores(first, second, n)
        assert len(scores) == n
        p_none = torch.softmax(first[: min(n, 9) + 1].double(), 0)[0]
        # P(0) + sum of P(i) is 1: every label's probability is counted once
        assert math.isclose(p_none * (1 + sum(math.exp(s) for s in scores)), 1.0, rel_tol=1e-9)


def test_pointer_scorer_shares_the_chunk_prefill_and_matches_a_full_forward(tokenizer):
    from transformers import LlamaConfig, LlamaForCausalLM

    from inference.capture_scorer import PointerScorer, pointer_scores

    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
    )
    model = LlamaForCausalLM(config).eval()
    scorer = PointerScorer(model, tokenizer)
    chunk = [f"Sentence {i} says something." for i in range(12)]
    questions = ["What does sentence three say?", "Who?"]
    got = scorer.score(chunk, questions)
    for q, row in zip(questions, got):
        ids = scorer._ids(scorer.prefix(chunk))[0].tolist() + scorer._ids(scorer.suffix(q))[0].tolist()
        with torch.no_grad():
            first = model(torch.tensor([ids])).logits[0, -1, scorer.digits]
            after_one = model(torch.tensor([ids + [scorer.digits[1]]])).logits[0, -1]
            second = after_one[[scorer.close, *scorer.digits]].unsqueeze(0)
        want = pointer_scores(first, second, len(chunk))
        assert row == pytest.approx(want, abs=1e-4)


def test_the_pointer_loss_trains_the_scores_it_reads():
    from inference.capture_scorer import label_log_probs, pointer_scores
    from training.capture_rows import pointer_loss

    torch.manual_seed(1)
    first, second = torch.randn(10, requires_grad=True), torch.randn(9, 11, requires_grad=True)
    n, labels = 37, [0] * 37
    labels[24] = 1  # sentence 25: "2" then "5"
    logp = label_log_probs(first, second, n)
    assert math.isclose(float(torch.logsumexp(logp, 0)), 0.0, abs_tol=1e-9)
    loss = pointer_loss(logp, labels)
    loss.backward()
    with torch.no_grad():
        first -= first.grad
        second -= second.grad
    before = pointer_scores(first + first.grad, second + second.grad, n)[24]
    assert pointer_scores(first, second, n)[24] > before  # one step of descent raises the evidence's score
