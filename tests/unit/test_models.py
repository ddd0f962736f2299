"""The bundled model's folder: its tokenizer ends a turn where the model (and so every engine) does."""

from __future__ import annotations

import copy

from transformers import AutoConfig

from inference.models import end_of_turn_from_config
from training.policy import target_ids


def test_supervised_targets_end_with_the_token_the_engines_stop_at(tokenizer, model_path):
    config = AutoConfig.from_pretrained(model_path)
    end_of_turn = tokenizer.convert_tokens_to_ids("<|im_end|>")
    turn = tokenizer.apply_chat_template([{"role": "assistant", "content": "x"}], tokenize=False)
    assert turn.split("x", 1)[1].startswith("<|im_end|>")  # the chat template's end of an answer
    assert config.eos_token_id == end_of_turn and target_ids(tokenizer, "x")[-1] == end_of_turn
    # transformers 5.17 read the GGUF's tokenizer with eos <|im_start|>: targets then taught that token
    misread = copy.deepcopy(tokenizer)
    misread.eos_token = "<|im_start|>"
    assert target_ids(misread, "x")[-1] != end_of_turn
    end_of_turn_from_config(misread, config)
    assert target_ids(misread, "x")[-1] == end_of_turn == misread.pad_token_id
