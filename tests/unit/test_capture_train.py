"""The pointer scorer's trainer (training/capture_train.py): the loss it descends is read from the prefill the
probe scores with, a step lowers it, the row order survives a longer or resumed run, and a checkpoint resumes."""

from __future__ import annotations

import doctest

import pytest
import torch

from training import capture_train
from training.capture_rows import CaptureRow
from training.capture_train import Item, item_loss, schedule


def test_doctests():
    assert doctest.testmod(capture_train).failed == 0


def _tiny(tokenizer):
    from peft import LoraConfig, get_peft_model
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
    )
    lora = LoraConfig(r=4, lora_alpha=8, lora_dropout=0.0, target_modules=capture_train.TARGETS, task_type="CAUSAL_LM")
    return get_peft_model(LlamaForCausalLM(config), lora)


def test_the_trained_log_probs_are_what_the_probe_scores(tokenizer):
    from inference.capture_scorer import PointerScorer

    scorer = PointerScorer(_tiny(tokenizer), tokenizer)
    chunk, questions = [f"Sentence {i} says something." for i in range(12)], ["Which law?", "Who?"]
    scores = scorer.score(chunk, questions)
    for logp, row in zip(scorer.log_probs(chunk, questions), scores):
        assert logp.requires_grad and len(logp) == len(chunk) + 1
        assert (logp[1:] - logp[0]).tolist() == pytest.approx(row, abs=1e-6)


def test_a_step_lowers_the_loss_of_evidence_and_of_none(tokenizer):
    from inference.capture_scorer import PointerScorer

    model = _tiny(tokenizer)
    scorer = PointerScorer(model, tokenizer)
    labels = [0] * 11
    labels[7] = 1  # sentence 8 answers the first question; the second has no answer here (label 0)
    item = Item(
        "c",
        0,
        tuple(f"Sentence {i} says something." for i in range(11)),
        ("Which law?", "Is there a cap?"),
        (tuple(labels), (0,) * 11),
    )
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-2)
    before, stats = item_loss(scorer, item)
    assert [s["positive"] for s in stats] == [True, False] and stats[1]["rank"] is None
    before.backward()
    optimizer.step()
    with torch.no_grad():
        after, _ = item_loss(scorer, item)
    assert float(after) < float(before)


def _rows() -> list[tuple[str, CaptureRow]]:
    text = "One. Two. Three."
    spans = ((0, 4), (5, 9), (10, 16))
    return [
        (text, CaptureRow("c", k, spans, ("a", "b", "c"), ((0, k % 2, 0), (0, 0, 0), (int(k == 3), 0, 0))))
        for k in range(6)
    ] + [(text, CaptureRow("c", 9, (), ("a",), ((),)))]


def test_the_schedule_mixes_evidence_and_none_rows_and_grows_without_reordering():
    short, long = schedule(_rows(), 20, 0.75, 3), schedule(_rows(), 60, 0.75, 3)
    assert long[:20] == short  # a resumed run with more --steps sees the same first rows
    with_ev = [any(any(lab) for lab in i.labels) for i in long]
    assert 0 < sum(with_ev) < len(long)
    assert all(i.sentences for i in long)  # a row without sentences is never drawn
    for i in long:  # the questions with evidence first, then those without
        has = [any(lab) for lab in i.labels]
        assert has == sorted(has, reverse=True)


def test_a_saved_step_resumes_the_adapter_and_the_optimiser(tokenizer, tmp_path):
    from peft import PeftModel
    from transformers import LlamaConfig, LlamaForCausalLM

    model = _tiny(tokenizer)
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=1e-2)
    for p in params:
        p.grad = torch.randn_like(p)
    optimizer.step()
    path = capture_train.save(tmp_path, 4, model, optimizer)
    assert (tmp_path / "latest").read_text() == "step-0004" and torch.load(path / "state.pt")["step"] == 4
    torch.manual_seed(1)
    base = LlamaForCausalLM(
        LlamaConfig(
            vocab_size=len(tokenizer),
            hidden_size=32,
            intermediate_size=64,
            num_hidden_layers=2,
            num_attention_heads=2,
            num_key_value_heads=1,
        )
    )
    base.load_state_dict(model.get_base_model().state_dict(), strict=False)
    again = PeftModel.from_pretrained(base, path, is_trainable=True)
    mine = {k: v for k, v in model.state_dict().items() if "lora_" in k}
    theirs = {k: v for k, v in again.state_dict().items() if "lora_" in k}
    assert mine.keys() == theirs.keys() and all(torch.equal(mine[k], theirs[k]) for k in mine)
    state = torch.load(path / "state.pt")["optimizer"]
    fresh = torch.optim.AdamW([p for p in again.parameters() if p.requires_grad], lr=1e-2)
    fresh.load_state_dict(state)
    assert len(fresh.state) == len(params)
