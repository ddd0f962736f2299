"""MemAgent's reference reading loop, as its evaluation scripts drive a vLLM server — written here
from their description, for the side-by-side in benchmarks/run.py.

What MemAgent's `taskutils/memory_eval/utils/recurrent_boxed.py` does per question (and
`ruler_hqa.py` runs 64 questions at once):
- tokenize the whole context, cut the token ids into chunks of RECURRENT_CHUNK_SIZE, decode each;
- for each chunk in turn, one `/v1/chat/completions` request with the update prompt (the same
  TEMPLATE as our `memagent` set), temperature 0.7, top_p 0.95, max_tokens = RECURRENT_MAX_NEW;
  the reply is the new memory;
- one last request with the final prompt and the same sampling and max_tokens; the answer is that
  reply (scored on its last \\boxed{}).
Questions are independent: nothing is shared between them but the server.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import httpx

from inference.templates import MEMAGENT, NO_MEMORY


@dataclass(frozen=True)
class ReferenceResult:
    output: str  # the final reply
    memory: str
    prompt_tokens: int
    completion_tokens: int


def _chat(client: httpx.Client, url: str, model: str, message: str, max_tokens: int, usage: list[int]) -> str:
    response = client.post(
        url,
        json={
            "model": model,
            "messages": [{"role": "user", "content": message}],
            "temperature": 0.7,
            "top_p": 0.95,
            "max_tokens": max_tokens,
        },
    )
    response.raise_for_status()  # theirs returns '' on an error; a benchmark must not hide one
    data = response.json()
    usage[0] += data["usage"]["prompt_tokens"]
    usage[1] += data["usage"]["completion_tokens"]
    return data["choices"][0]["message"]["content"]


def _read_one(
    client: httpx.Client,
    url: str,
    model: str,
    tokenizer,
    question: str,
    context: str,
    chunk_tokens: int,
    max_new: int,
) -> ReferenceResult:
    ids = tokenizer.encode(context.strip(), add_special_tokens=False)
    memory, usage = NO_MEMORY, [0, 0]
    for i in range(0, len(ids), chunk_tokens):
        chunk = tokenizer.decode(ids[i : i + chunk_tokens])
        memory = _chat(client, url, model, MEMAGENT.render_update(question.strip(), memory, chunk), max_new, usage)
    output = _chat(client, url, model, MEMAGENT.render_final(question.strip(), memory), max_new, usage)
    return ReferenceResult(output, memory, usage[0], usage[1])


def read_reference(
    base_url: str,
    model: str,
    tokenizer,
    items: list[tuple[str, str]],
    chunk_tokens: int,
    max_new: int,
    concurrency: int = 64,
) -> list[ReferenceResult]:
    """Read every (question, context) with the reference loop, `concurrency` questions in flight
    (theirs are asyncio tasks, ours threads: either way that many requests wait on the server at
    once)."""
    url = base_url.rstrip("/") + "/chat/completions"
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    with (
        httpx.Client(timeout=httpx.Timeout(3600.0), limits=limits) as client,
        ThreadPoolExecutor(max_workers=concurrency) as pool,
    ):
        futures = [
            pool.submit(_read_one, client, url, model, tokenizer, question, context, chunk_tokens, max_new)
            for question, context in items
        ]
        return [f.result() for f in futures]
