"""OpenAIEngine against a tiny local HTTP stub: the request it sends and every fault it must survive
or report (timeouts, 5xx, 4xx, malformed answers, nothing listening). The real vLLM server is
tested in tests/integration/test_vllm_engine.py."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from inference.engines.base import EngineError, EngineUnavailable
from inference.engines.openai_engine import OpenAIEngine
from inference.vllm_server import free_port


class Stub:
    """An HTTP server that answers each request with the next scripted reply and records requests.

    A reply is (status, body, delay_s); body is a dict (sent as JSON) or a str (sent as is).
    """

    def __init__(self) -> None:
        self.replies: list[tuple[int, object, float]] = []
        self.requests: list[tuple[str, str, dict | None]] = []
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length)) if length else None
                stub.requests.append((self.command, self.path, body))
                status, payload, delay = stub.replies.pop(0) if stub.replies else (500, "no reply scripted", 0)
                time.sleep(delay)
                data = payload if isinstance(payload, str) else json.dumps(payload)
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data.encode())))
                    self.end_headers()
                    self.wfile.write(data.encode())
                except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout test)
                    pass

            do_GET = do_POST = _answer

            def log_message(self, *_args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def reply(self, status: int = 200, body: object = None, delay: float = 0.0) -> Stub:
        self.replies.append((status, body if body is not None else {}, delay))
        return self

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def stub():
    s = Stub()
    yield s
    s.close()


@pytest.fixture
def engine_at(tokenizer):
    engines = []

    def make(url: str, **kw) -> OpenAIEngine:
        kw.setdefault("model", "m")
        kw.setdefault("backoff_s", 0.01)
        engine = OpenAIEngine(url, tokenizer, **kw)
        engines.append(engine)
        return engine

    yield make
    for e in engines:
        e.close()


def completion(*texts: str, token_ids: bool = True, finish: str = "stop", **extra) -> dict:
    choices = []
    for i, t in enumerate(texts):
        c = {"index": i, "text": t, "finish_reason": finish}
        if token_ids:
            c["token_ids"] = list(range(len(t.split()) + 1))
        choices.append(c)
    return {
        "id": "cmpl-1",
        "object": "text_completion",
        "choices": choices,
        "usage": {"prompt_tokens": 100, "completion_tokens": 9, "total_tokens": 109},
        **extra,
    }


def test_one_request_carries_the_whole_batch_rendered_with_the_chat_template(stub, engine_at, tokenizer):
    stub.reply(body=completion("blue", "one two three"))
    out = engine_at(stub.url).generate(["Name a colour.", "Count to three."], max_tokens=24)
    assert [c.text for c in out] == ["blue", "one two three"]
    assert [c.completion_tokens for c in out] == [2, 4]  # from the server's token ids
    ((method, path, body),) = stub.requests
    assert (method, path) == ("POST", "/v1/completions")
    expected = [
        tokenizer.apply_chat_template([{"role": "user", "content": m}], tokenize=False, add_generation_prompt=True)
        for m in ["Name a colour.", "Count to three."]
    ]
    assert body["prompt"] == expected
    assert body["prompt"][0].endswith("<|im_start|>assistant\n")
    assert (body["model"], body["max_tokens"], body["temperature"]) == ("m", 24, 0.0)
    assert body["add_special_tokens"] is False
    n_prompt = len(tokenizer(expected[0], add_special_tokens=False)["input_ids"])
    assert out[0].prompt_tokens == n_prompt


def test_choices_are_matched_by_index_and_counted_locally_without_token_ids(stub, engine_at, tokenizer):
    body = completion("first answer", "second", token_ids=False)
    body["choices"].reverse()
    body["choices"][0]["finish_reason"] = "length"  # the one for prompt 1 ran out of tokens
    stub.reply(body=body)
    out = engine_at(stub.url, vllm_extensions=False).generate(["a", "b"], max_tokens=7)
    assert [c.text for c in out] == ["first answer", "second"]
    assert out[1].completion_tokens == 7
    assert out[0].completion_tokens == len(tokenizer("first answer", add_special_tokens=False)["input_ids"]) + 1
    assert "add_special_tokens" not in stub.requests[0][2]


def test_the_model_name_is_asked_of_the_server_when_not_configured(stub, engine_at):
    stub.reply(body={"object": "list", "data": [{"id": "served-name", "object": "model"}]})
    stub.reply(body=completion("x"))
    engine_at(stub.url, model=None).generate(["q"], 4)
    assert [r[1] for r in stub.requests] == ["/v1/models", "/v1/completions"]
    assert stub.requests[1][2]["model"] == "served-name"


def test_5xx_then_success_is_retried(stub, engine_at):
    stub.reply(503, {"error": {"message": "busy"}}).reply(502, "bad gateway").reply(body=completion("ok"))
    (out,) = engine_at(stub.url, max_tries=3).generate(["q"], 4)
    assert out.text == "ok"
    assert len(stub.requests) == 3


def test_429_is_retried(stub, engine_at):
    stub.reply(429, {"error": {"message": "slow down"}}).reply(body=completion("ok"))
    assert engine_at(stub.url).generate(["q"], 4)[0].text == "ok"


def test_5xx_exhausted_raises_a_clear_error(stub, engine_at):
    for _ in range(3):
        stub.reply(500, {"error": {"message": "engine core died"}})
    with pytest.raises(EngineError) as err:
        engine_at(stub.url, max_tries=3).generate(["q"], 4)
    assert len(stub.requests) == 3
    message = str(err.value)
    assert stub.url in message and "HTTP 500" in message and "engine core died" in message and "3 tries" in message
    assert isinstance(err.value, EngineUnavailable)  # an outage: the runner re-queues, it does not fail


def test_4xx_is_not_retried(stub, engine_at):
    stub.reply(400, {"error": {"message": "This model's maximum context length is 8192 tokens"}})
    with pytest.raises(EngineError, match="HTTP 400.*maximum context length") as err:
        engine_at(stub.url).generate(["q"], 4)
    assert len(stub.requests) == 1
    assert not isinstance(err.value, EngineUnavailable)  # the request's fault: the reading fails with it


def test_a_server_that_does_not_answer_in_time_times_out_and_is_retried(stub, engine_at):
    stub.reply(body=completion("late"), delay=2.0).reply(body=completion("late"), delay=2.0)
    started = time.monotonic()
    with pytest.raises(EngineError, match=r"did not answer within 0.3 s \(2 tries\)"):
        engine_at(stub.url, timeout_s=0.3, max_tries=2).generate(["q"], 4)
    assert time.monotonic() - started < 3.5  # two full waits would take 4 s
    assert len(stub.requests) == 2


def test_timeout_then_success(stub, engine_at):
    stub.reply(body=completion("late"), delay=1.0).reply(body=completion("on time"))
    assert engine_at(stub.url, timeout_s=0.3).generate(["q"], 4)[0].text == "on time"


def test_connection_refused(engine_at):
    url = f"http://127.0.0.1:{free_port()}/v1"  # nothing listens there
    with pytest.raises(EngineError, match=r"could not be reached.*\(2 tries\)") as err:
        engine_at(url, max_tries=2).generate(["q"], 4)
    assert url in str(err.value)
    assert isinstance(err.value, EngineUnavailable)


@pytest.mark.parametrize(
    ("body", "why"),
    [
        ("<html>502 from a proxy</html>", "not JSON"),
        ({"object": "error"}, "no list of choices"),
        (completion("only one"), "1 choices for 2 prompts"),
        ({"choices": [{"index": 0, "text": "a"}, {"index": 0, "text": "b"}]}, "bad choice index 0"),
        ({"choices": [{"index": 0, "text": None}, {"index": 1, "text": "b"}]}, "a choice without text"),
    ],
)
def test_malformed_answers_are_reported(stub, engine_at, body, why):
    stub.reply(body=body)
    with pytest.raises(EngineError, match="malformed") as err:
        engine_at(stub.url).generate(["a", "b"], 4)
    assert why in str(err.value)
    assert len(stub.requests) == 1


def test_base_url_without_v1_and_an_empty_batch(stub, engine_at):
    stub.reply(body=completion("x"))
    engine = engine_at(stub.url.removesuffix("/v1") + "/")
    assert engine.base_url == stub.url
    assert engine.generate([], 4) == []
    assert stub.requests == []
    assert engine.generate(["q"], 4)[0].text == "x"


def test_the_app_factory_builds_the_configured_engine(stub, tmp_path):
    from app.services.llm import close_engines, engine_for
    from app.settings import Settings
    from tests.conftest import MODEL_CACHE

    stub.reply(body=completion("from the stub"))
    settings = Settings(
        engine="openai", openai_base_url=stub.url, openai_model="m", model_cache_dir=MODEL_CACHE, data_dir=tmp_path
    )
    try:
        engine = engine_for(settings)
        assert isinstance(engine, OpenAIEngine) and engine_for(settings) is engine  # one per process
        assert engine.generate(["q"], 4)[0].text == "from the stub"
    finally:
        close_engines()
    missing = Settings(
        engine="vllm-local", vllm_python=tmp_path / "no-python", model_cache_dir=MODEL_CACHE, data_dir=tmp_path
    )
    with pytest.raises(EngineError, match="make vllm"):
        engine_for(missing)


def test_an_owned_server_is_checked_before_each_request_and_stopped_on_close(stub, tokenizer):
    class Server:
        checks = stops = 0

        def ensure_running(self):
            Server.checks += 1

        def stop(self):
            Server.stops += 1

    stub.reply(500, "boom").reply(body=completion("ok"))
    engine = OpenAIEngine(stub.url, tokenizer, "m", server=Server(), backoff_s=0.01)
    assert engine.generate(["q"], 4)[0].text == "ok"
    assert Server.checks == 2  # once per try: a crashed server comes back before the retry
    engine.close()
    assert Server.stops == 1
