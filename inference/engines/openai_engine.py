"""Engine for any OpenAI-compatible server (vLLM first of all), over HTTP.

The prompts are rendered here, with the local copy of the served model's tokenizer and its chat
template, and sent as one `/v1/completions` request carrying the whole batch (`prompt` is a list).
So the model sees exactly the tokens the in-process engine would feed it, the server schedules all
of them together (continuous batching), and the chunker's token counts are the server's.

Failures the server may recover from (connection refused or reset, timeouts, 5xx, 408, 429) are
retried a bounded number of times with exponential backoff, then raise `EngineUnavailable` (the
runner puts the readings back in the queue: an outage); anything else, and every malformed
answer, raises `EngineError` at once with a message that says what failed and where.
"""

from __future__ import annotations

import json
import logging
import time
from typing import Any, Sequence

import httpx

from inference.engines.base import Completion, Engine, EngineError, EngineUnavailable

log = logging.getLogger(__name__)

_RETRY_STATUS = {408, 429}  # and every 5xx


class OpenAIEngine(Engine):
    name = "openai"

    def __init__(
        self,
        base_url: str,
        tokenizer: Any,
        model: str | None = None,
        *,
        api_key: str | None = None,
        timeout_s: float = 600.0,
        connect_timeout_s: float = 10.0,
        max_tries: int = 3,
        backoff_s: float = 1.0,
        vllm_extensions: bool = True,
        server: Any = None,
        transport: httpx.BaseTransport | None = None,
    ):
        """`base_url` ends in `/v1` (it is added when missing). `model` is the served model name;
        None asks the server (`/v1/models`) on first use and takes its only model.

        `vllm_extensions` sends vLLM's extra request fields: `add_special_tokens: false` (the chat
        template already holds every special token; the in-process engine adds none either) and
        `return_token_ids: true` (exact per-prompt completion token counts). Servers that reject
        unknown fields need it off; counts are then taken with the local tokenizer.

        `server` is a supervised server this engine owns (anything with `ensure_running()` and
        `stop()`, such as `inference.vllm_server.VLLMServer`): it is restarted before a request if it
        has died, and `close()` stops it.
        """
        if max_tries < 1:
            raise ValueError("max_tries must be at least 1")
        base_url = base_url.rstrip("/")
        if not base_url.endswith("/v1"):
            base_url += "/v1"
        self.base_url = base_url
        self.tokenizer = tokenizer
        self.model = model or None
        self.timeout_s = timeout_s
        self.max_tries = max_tries
        self.backoff_s = backoff_s
        self.vllm_extensions = vllm_extensions
        self.server = server
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.Client(
            timeout=httpx.Timeout(timeout_s, connect=min(connect_timeout_s, timeout_s)),
            headers=headers,
            transport=transport,
        )

    # --- the Engine interface ----------------------------------------------------------------

    def generate(self, messages: Sequence[str], max_tokens: int, temperature: float = 0.0) -> list[Completion]:
        if not messages:
            return []
        prompts = [self.render(m) for m in messages]
        body: dict[str, Any] = {
            "model": self.model_name(),
            "prompt": prompts,
            "max_tokens": max_tokens,
            "temperature": temperature,
            "n": 1,
        }
        if self.vllm_extensions:
            body["add_special_tokens"] = False
            body["return_token_ids"] = True
        data = self._request("POST", "/completions", body)
        return self._parse_completions(data, prompts, max_tokens)

    def close(self) -> None:
        self._client.close()
        if self.server is not None:
            self.server.stop()

    # --- helpers -------------------------------------------------------------------------------

    def render(self, message: str) -> str:
        """The prompt text for one user message: the model's chat template, ready for its answer."""
        return self.tokenizer.apply_chat_template(
            [{"role": "user", "content": message}], tokenize=False, add_generation_prompt=True
        )

    def _count(self, text: str) -> int:
        return len(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def model_name(self) -> str:
        """The served model's name: the configured one, else the server's only model."""
        if self.model is None:
            data = self._request("GET", "/models", None)
            try:
                names = [m["id"] for m in data["data"]]
            except (KeyError, TypeError) as exc:
                raise EngineError(f"server at {self.base_url} sent a malformed model list: {data!r:.300}") from exc
            if len(names) != 1:
                raise EngineError(
                    f"server at {self.base_url} serves {len(names)} models ({', '.join(names)}): "
                    "name one (LONGREAD_OPENAI_MODEL)"
                )
            self.model = names[0]
        return self.model

    def _request(self, method: str, path: str, body: dict[str, Any] | None) -> Any:
        """One API call with bounded retries; returns the decoded JSON body."""
        url = self.base_url + path
        what = f"server at {self.base_url}"
        last = ""
        for attempt in range(1, self.max_tries + 1):
            if attempt > 1:
                delay = self.backoff_s * 2 ** (attempt - 2)
                log.warning("%s: %s; try %d of %d in %.1f s", what, last, attempt, self.max_tries, delay)
                time.sleep(delay)
            if self.server is not None:
                self.server.ensure_running()  # a supervised server that crashed comes back
            try:
                response = self._client.request(method, url, json=body)
            except httpx.TimeoutException:
                last = f"did not answer within {self.timeout_s:g} s"
                continue
            except httpx.TransportError as exc:  # refused, reset, DNS, broken stream
                last = f"could not be reached ({type(exc).__name__}: {exc})"
                continue
            if response.status_code >= 500 or response.status_code in _RETRY_STATUS:
                last = f"answered HTTP {response.status_code}: {_detail(response)}"
                continue
            if response.status_code >= 400:
                raise EngineError(
                    f"{what} refused {method} {path} with HTTP {response.status_code}: {_detail(response)}"
                )
            try:
                return response.json()
            except (json.JSONDecodeError, UnicodeDecodeError) as exc:
                raise EngineError(
                    f"{what} sent a malformed answer to {method} {path} (not JSON): {response.text!r:.300}"
                ) from exc
        tries = f"{self.max_tries} tr{'y' if self.max_tries == 1 else 'ies'}"
        raise EngineUnavailable(f"{what} {last} ({tries})")

    def _parse_completions(self, data: Any, prompts: list[str], max_tokens: int) -> list[Completion]:
        def malformed(why: str) -> EngineError:
            return EngineError(f"server at {self.base_url} sent a malformed completion ({why}): {data!r:.300}")

        if not isinstance(data, dict) or not isinstance(data.get("choices"), list):
            raise malformed("no list of choices")
        choices = data["choices"]
        if len(choices) != len(prompts):
            raise malformed(f"{len(choices)} choices for {len(prompts)} prompts")
        by_index: dict[int, dict[str, Any]] = {}
        for position, choice in enumerate(choices):
            if not isinstance(choice, dict) or not isinstance(choice.get("text"), str):
                raise malformed("a choice without text")
            index = choice.get("index", position)
            if not isinstance(index, int) or not 0 <= index < len(prompts) or index in by_index:
                raise malformed(f"bad choice index {index!r}")
            by_index[index] = choice

        usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
        out = []
        for i, prompt in enumerate(prompts):
            choice = by_index[i]
            text = choice["text"]
            token_ids = choice.get("token_ids")
            if not isinstance(token_ids, list):
                token_ids = []
            if token_ids:
                n_out = len(token_ids)
            elif len(prompts) == 1 and isinstance(usage.get("completion_tokens"), int):
                n_out = usage["completion_tokens"]
            elif choice.get("finish_reason") == "length":
                n_out = max_tokens
            else:  # usage covers the whole batch: count this one locally (+1 for the stop token)
                n_out = min(self._count(text) + (choice.get("finish_reason") == "stop"), max_tokens)
            prompt_ids = choice.get("prompt_token_ids")
            n_in = len(prompt_ids) if isinstance(prompt_ids, list) else self._count(prompt)
            out.append(Completion(text, n_in, n_out, tuple(token_ids)))
        return out


def _detail(response: httpx.Response) -> str:
    """The server's error message, short: vLLM and OpenAI put it in {"error": {"message": ...}}."""
    try:
        error = response.json().get("error")
        message = error.get("message") if isinstance(error, dict) else error
        if message:
            return str(message)[:300]
    except Exception:
        pass
    return response.text[:300] or response.reason_phrase
