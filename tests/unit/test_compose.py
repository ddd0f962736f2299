"""The GPU deployment (docker-compose.yml, Dockerfile, .dockerignore, .env.example), checked without Docker.

These machines have no Docker daemon, so the compose file is interpolated here the way `docker compose`
does it (`${VAR}`, `${VAR:-default}`, `${VAR-default}`, `${VAR:?message}`, `${VAR?message}`, `${VAR:+x}`,
`$$`; values from .env.example) and validated against the Compose Specification's JSON schema
(tests/data/compose-spec.json, vendored; its source is in tests/data/compose-spec.SOURCE). Then it checks
what a schema cannot: the services the app needs, health checks and health conditions, Redis append-only,
no secret with a default anywhere, every variable documented, every `LONGREAD_*` variable a real setting,
the `longread` commands real, the worker scalable, the image non-root with no secret in it.

Each check is a function that returns the problems it finds; `test_mutation_is_caught` breaks the real
files one way per check and asserts that the check names the break, so no check can pass vacuously.
"""

from __future__ import annotations

import copy
import json
import re
import shlex
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import jsonschema
import pytest
import yaml

from app.cli import build_parser
from app.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = ROOT / "tests" / "data" / "compose-spec.json"

#: what production needs; `migrate` is the one-shot that runs the migrations before app and workers
REQUIRED_SERVICES = {"postgres", "redis", "vllm", "app", "worker", "trainer", "migrate"}
DEFAULT_MODEL = "BytedTsinghua-SIA/RL-MemoryAgent-14B"
#: names of things that hold secrets (CHUNK_TOKENS and TOKENIZER are not: TOKEN must stand alone)
SECRET_NAME = re.compile(r"SECRET|PASSW(?:OR)?D|CREDENTIAL|PRIVATE|(?:^|_)(?:API_?)?(?:KEY|TOKEN)(?:$|_)", re.I)
#: values that placeholder secrets get where a test needs the file interpolated
PLACEHOLDER_SECRETS = {"LONGREAD_SECRET_KEY": "test-secret-key-not-for-use", "POSTGRES_PASSWORD": "test-password"}


# --- compose interpolation -------------------------------------------------------------------------------


class MissingVariable(Exception):
    """`${VAR:?message}` (or `${VAR?message}`) with VAR unset or empty: compose refuses to start."""

    def __init__(self, name: str, message: str):
        super().__init__(f"{name}: {message}")
        self.name = name


#: `$$` | `${NAME}` / `${NAME<op>ARG}` (ARG may hold one level of `${...}`) | `$NAME`
_REF = re.compile(
    r"\$(?:(?P<escape>\$)"
    r"|\{(?P<braced>[A-Za-z_][A-Za-z0-9_]*)(?:(?P<op>:?[-?+])(?P<arg>(?:[^{}]|\{[^{}]*\})*))?\}"
    r"|(?P<bare>[A-Za-z_][A-Za-z0-9_]*))"
)


@dataclass(frozen=True)
class Ref:
    name: str
    op: str | None
    arg: str


def references(text: str) -> Iterator[Ref]:
    """Every variable a string refers to, those inside defaults included (not `$$NAME`, an escape)."""
    for m in _REF.finditer(text):
        if m["escape"]:
            continue
        ref = Ref(m["braced"] or m["bare"], m["op"], m["arg"] or "")
        yield ref
        yield from references(ref.arg)


def interpolate(text: str, env: dict[str, str]) -> str:
    def one(m: re.Match[str]) -> str:
        if m["escape"]:
            return "$"
        name, op, arg = m["braced"] or m["bare"], m["op"], m["arg"] or ""
        value = env.get(name)
        if op is None:
            return value or ""
        if op == ":-":
            return value if value else interpolate(arg, env)
        if op == "-":
            return value if value is not None else interpolate(arg, env)
        if op == ":?" and not value or op == "?" and value is None:
            raise MissingVariable(name, arg)
        if op in (":?", "?"):
            return value or ""
        if op == ":+":
            return interpolate(arg, env) if value else ""
        return interpolate(arg, env) if value is not None else ""  # "+"

    return _REF.sub(one, text)


def walk_strings(node: Any, path: tuple = ()) -> Iterator[tuple[tuple, str]]:
    if isinstance(node, dict):
        for k, v in node.items():
            yield from walk_strings(v, path + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from walk_strings(v, path + (i,))
    elif isinstance(node, str):
        yield path, node


def map_strings(node: Any, f: Callable[[str], str]) -> Any:
    if isinstance(node, dict):
        return {k: map_strings(v, f) for k, v in node.items()}
    if isinstance(node, list):
        return [map_strings(v, f) for v in node]
    return f(node) if isinstance(node, str) else node


def parse_env_file(text: str) -> dict[str, str]:
    """KEY=VALUE lines (compose's .env): comments and blank lines skipped, optional quotes removed."""
    env = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        key, sep, value = line.partition("=")
        assert sep, f".env.example: {line!r} is not KEY=VALUE"
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        env[key.strip()] = value
    return env


# --- the deployment files --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Deployment:
    compose_text: str
    env_example: str
    dockerfile: str
    dockerignore: str
    #: a structural edit applied after parsing (the mutation tests' way to break the file)
    edit: Callable[[dict], None] | None = field(default=None, compare=False)

    @classmethod
    def from_repo(cls) -> Deployment:
        read = lambda name: (ROOT / name).read_text(encoding="utf-8")  # noqa: E731
        return cls(read("docker-compose.yml"), read(".env.example"), read("Dockerfile"), read(".dockerignore"))

    @cached_property
    def raw(self) -> dict:
        """The compose file as written (YAML anchors and merge keys resolved), before interpolation."""
        data = yaml.safe_load(self.compose_text)
        if self.edit is not None:
            data = copy.deepcopy(data)
            self.edit(data)
        return data

    @cached_property
    def env(self) -> dict[str, str]:
        return parse_env_file(self.env_example)

    def interpolated(self, env: dict[str, str] | None = None) -> dict:
        env = {**self.env, **PLACEHOLDER_SECRETS} if env is None else env
        return map_strings(self.raw, lambda s: interpolate(s, env))

    @cached_property
    def config(self) -> dict:
        """What `docker compose config` would see with .env.example and the two secrets filled in."""
        return self.interpolated()

    @property
    def services(self) -> dict[str, dict]:
        return self.config.get("services") or {}

    def env_of(self, service: str) -> dict[str, str]:
        environment = self.services[service].get("environment") or {}
        if isinstance(environment, list):
            environment = dict(item.partition("=")[::2] for item in environment)
        return {k: "" if v is None else str(v) for k, v in environment.items()}

    def raw_env_of(self, service: str) -> dict[str, str]:
        environment = self.raw["services"][service].get("environment") or {}
        if isinstance(environment, list):
            environment = dict(item.partition("=")[::2] for item in environment)
        return {k: "" if v is None else str(v) for k, v in environment.items()}

    def command_of(self, service: str) -> list[str]:
        command = self.services[service].get("command") or []
        return shlex.split(command) if isinstance(command, str) else [str(c) for c in command]

    @property
    def variables(self) -> set[str]:
        return {ref.name for _, s in walk_strings(self.raw) for ref in references(s)}

    def uses_app_image(self, service: str) -> bool:
        return str(self.services[service].get("image", "")).startswith(("longread:", "longread-trainer:"))


def one_shot(svc: dict) -> bool:
    return str(svc.get("restart", "no")) == "no" and "healthcheck" in svc and svc["healthcheck"].get("disable")


def has_healthcheck(svc: dict) -> bool:
    check = svc.get("healthcheck") or {}
    return bool(check.get("test")) and not check.get("disable") and check.get("test") != ["NONE"]


def depends_on(svc: dict) -> dict[str, dict]:
    deps = svc.get("depends_on") or {}
    return {name: {} for name in deps} if isinstance(deps, list) else deps


# --- the checks: each returns the problems it finds ---------------------------------------------------------


def check_schema(d: Deployment) -> list[str]:
    validator = jsonschema.Draft7Validator(json.loads(SCHEMA.read_text(encoding="utf-8")))
    return [
        f"schema: {'/'.join(map(str, e.absolute_path)) or '(top)'}: {e.message}"
        for e in sorted(validator.iter_errors(d.config), key=lambda e: list(map(str, e.absolute_path)))
    ]


def check_required_services(d: Deployment) -> list[str]:
    missing = REQUIRED_SERVICES - set(d.services)
    return [f"no `{name}` service" for name in sorted(missing)]


def check_health(d: Deployment) -> list[str]:
    problems = []
    for name, svc in d.services.items():
        if one_shot(svc):
            if svc.get("ports"):
                problems.append(f"{name}: a one-shot job publishes ports")
            continue
        if not has_healthcheck(svc):
            problems.append(f"{name}: long-running service without a health check")
        elif d.uses_app_image(name) and "serve" not in d.command_of(name):
            # The image's HEALTHCHECK probes the web app's /healthz: anything else needs its own.
            test = (
                " ".join(svc["healthcheck"]["test"])
                if isinstance(svc["healthcheck"]["test"], list)
                else svc["healthcheck"]["test"]
            )
            if "/healthz" in test:
                problems.append(f"{name}: probes the web app's /healthz, which it does not serve")
    return problems


def check_depends_on(d: Deployment) -> list[str]:
    problems = []
    for name, svc in d.services.items():
        for dep, spec in depends_on(svc).items():
            condition = spec.get("condition")
            target = d.services.get(dep)
            if target is None:
                problems.append(f"{name}: depends on a missing service {dep}")
            elif condition == "service_healthy":
                if not has_healthcheck(target):
                    problems.append(f"{name}: waits for {dep} to be healthy, but {dep} has no health check")
            elif condition == "service_completed_successfully":
                if not one_shot(target):
                    problems.append(f"{name}: waits for {dep} to complete, but {dep} is not a one-shot job")
            else:
                problems.append(f"{name}: depends on {dep} with condition {condition!r}, not a health condition")
    needs = {
        "migrate": {"postgres": "service_healthy"},
        "app": {"postgres": "service_healthy", "redis": "service_healthy", "migrate": "service_completed_successfully"},
        "worker": {
            "postgres": "service_healthy",
            "redis": "service_healthy",
            "vllm": "service_healthy",
            "migrate": "service_completed_successfully",
        },
        "trainer": {
            "postgres": "service_healthy",
            "redis": "service_healthy",
            "migrate": "service_completed_successfully",
        },
    }
    for name, wanted in needs.items():
        have = depends_on(d.services.get(name, {}))
        for dep, condition in wanted.items():
            if (have.get(dep) or {}).get("condition") != condition:
                problems.append(f"{name}: must depend on {dep} with condition {condition}")
    return problems


def check_data_services(d: Deployment) -> list[str]:
    problems = []
    redis = d.services.get("redis", {})
    command = d.command_of("redis") if redis else []
    if "--appendonly" not in command or command[command.index("--appendonly") + 1 :][:1] != ["yes"]:
        problems.append("redis: not append-only (`redis-server --appendonly yes`)")
    mounts = {
        name: [str(v).split(":")[1] if ":" in str(v) else str(v) for v in d.services.get(name, {}).get("volumes", [])]
        for name in ("postgres", "redis")
    }
    if "/data" not in mounts["redis"]:
        problems.append("redis: its /data (the append-only file) is not on a volume")
    if "/var/lib/postgresql/data" not in mounts["postgres"]:
        problems.append("postgres: its data folder is not on a volume")
    return problems


def check_vllm(d: Deployment) -> list[str]:
    problems = []
    vllm = d.services.get("vllm")
    if vllm is None:
        return ["no vllm service"]
    if not str(vllm.get("image", "")).startswith("vllm/vllm-openai"):
        problems.append(f"vllm: image {vllm.get('image')!r} is not vllm/vllm-openai")
    command = d.command_of("vllm")
    flags = {a: b for a, b in zip(command, command[1:]) if a.startswith("--")}
    if flags.get("--model") != DEFAULT_MODEL:
        problems.append(f"vllm: the default model is {flags.get('--model')!r}, not {DEFAULT_MODEL}")
    raw = d.raw["services"]["vllm"].get("command", "")
    raw = raw if isinstance(raw, str) else " ".join(map(str, raw))
    if not re.search(r"--tensor-parallel-size\s+\$\{[A-Z_]+(:-\d+)?\}", raw):
        problems.append("vllm: --tensor-parallel-size is not a variable")
    devices = (((vllm.get("deploy") or {}).get("resources") or {}).get("reservations") or {}).get("devices") or []
    if not any(dev.get("driver") == "nvidia" and "gpu" in dev.get("capabilities", []) for dev in devices):
        problems.append("vllm: no GPU reservation")
    if not any(str(v).endswith(":/root/.cache/huggingface") for v in vllm.get("volumes", [])):
        problems.append("vllm: the Hugging Face cache is not on a volume")
    test = vllm.get("healthcheck", {}).get("test", [])
    if "/health" not in " ".join(test if isinstance(test, list) else [test]):
        problems.append("vllm: the health check does not probe /health")
    return problems


def check_app_environment(d: Deployment) -> list[str]:
    problems = []
    vllm_port = None
    if "vllm" in d.services:
        command = d.command_of("vllm")
        vllm_port = command[command.index("--port") + 1] if "--port" in command else "8000"
    served = (
        dict(zip(d.command_of("vllm"), d.command_of("vllm")[1:])).get("--served-model-name")
        if "vllm" in d.services
        else None
    )
    for name in ("app", "worker"):
        if name not in d.services:
            continue
        env = d.env_of(name)
        want = {"LONGREAD_ENGINE": "openai", "LONGREAD_TEMPLATE_SET": "memagent", "LONGREAD_MODE": "production"}
        for key, value in want.items():
            if env.get(key) != value:
                problems.append(f"{name}: {key} is {env.get(key)!r}, not {value!r}")
        base = urlsplit(env.get("LONGREAD_OPENAI_BASE_URL", ""))
        if base.hostname != "vllm" or str(base.port) != str(vllm_port) or base.path.rstrip("/") != "/v1":
            problems.append(f"{name}: LONGREAD_OPENAI_BASE_URL is not http://vllm:{vllm_port}/v1")
        for key in ("LONGREAD_TOKENIZER", "LONGREAD_OPENAI_MODEL"):
            if env.get(key) != served:
                problems.append(f"{name}: {key} is {env.get(key)!r}, not the served model {served!r}")
        db = urlsplit(env.get("LONGREAD_DATABASE_URL", ""))
        if not db.scheme.startswith("postgresql") or db.hostname != "postgres":
            problems.append(f"{name}: LONGREAD_DATABASE_URL is not the postgres service")
        elif "postgres" in d.services:
            pg = d.env_of("postgres")
            if (db.username, db.password, db.path.lstrip("/")) != (
                pg.get("POSTGRES_USER"),
                pg.get("POSTGRES_PASSWORD"),
                pg.get("POSTGRES_DB"),
            ):
                problems.append(f"{name}: LONGREAD_DATABASE_URL's user, password or database is not postgres's")
        broker = urlsplit(env.get("LONGREAD_BROKER_URL", ""))
        if broker.scheme != "redis" or broker.hostname != "redis":
            problems.append(f"{name}: LONGREAD_BROKER_URL is not the redis service")
        if not re.fullmatch(r"\$\{LONGREAD_SECRET_KEY:\?[^}]+\}", d.raw_env_of(name).get("LONGREAD_SECRET_KEY", "")):
            problems.append(f"{name}: LONGREAD_SECRET_KEY is not ${{LONGREAD_SECRET_KEY:?message}}")
    return problems


def check_commands(d: Deployment) -> list[str]:
    """Each `longread ...` command parses with the real CLI; each service runs the right one."""
    problems = []
    wanted = {"app": "serve", "worker": "worker", "migrate": "migrate", "trainer": "worker"}
    for name, subcommand in wanted.items():
        if name not in d.services:
            continue
        command = d.command_of(name)
        if command[:1] != ["longread"]:
            problems.append(f"{name}: command {command} is not a `longread` command")
            continue
        try:
            args = build_parser().parse_args(command[1:])
        except SystemExit:
            problems.append(f"{name}: `{' '.join(command)}` is not a valid longread command")
            continue
        if args.command != subcommand:
            problems.append(f"{name}: runs `longread {args.command}`, not `longread {subcommand}`")
        elif subcommand == "serve" and not args.no_worker:
            problems.append("app: `longread serve` without --no-worker starts a worker of its own")
        elif subcommand == "worker" and args.training != (name == "trainer"):
            problems.append(f"{name}: `{' '.join(command)}` runs the wrong worker (--training is the trainer's)")
    return problems


def check_scalable_worker(d: Deployment) -> list[str]:
    worker = d.services.get("worker", {})
    return [
        f"worker: `{key}` is set, so `--scale worker=N` cannot run N of them"
        for key in ("container_name", "ports", "hostname")
        if worker.get(key)
    ]


def check_shared_uploads(d: Deployment) -> list[str]:
    problems = []
    mounts = {}
    for name in ("app", "worker", "trainer"):
        data_dir = d.env_of(name).get("LONGREAD_DATA_DIR") if name in d.services else None
        volume = next(
            (
                str(v).split(":")[0]
                for v in d.services.get(name, {}).get("volumes", [])
                if str(v).split(":")[1:2] == [data_dir]
            ),
            None,
        )
        if volume is None or volume not in (d.config.get("volumes") or {}):
            problems.append(f"{name}: LONGREAD_DATA_DIR ({data_dir}) is not on a named volume")
        mounts[name] = volume
    if len(set(mounts.values())) != 1:
        problems.append(f"app, worker and trainer do not share the uploads volume: {mounts}")
    return problems


def check_trainer(d: Deployment) -> list[str]:
    trainer = d.services.get("trainer")
    if trainer is None:
        return ["no trainer service"]
    problems = []
    if not {"training", "gpu"} & set(trainer.get("profiles", [])):
        problems.append("trainer: not under the `training`/`gpu` profile (it would start with every `up`)")
    devices = (((trainer.get("deploy") or {}).get("resources") or {}).get("reservations") or {}).get("devices") or []
    if not any(dev.get("driver") == "nvidia" and "gpu" in dev.get("capabilities", []) for dev in devices):
        problems.append("trainer: no GPU reservation")
    if one_shot(trainer) or str(trainer.get("restart", "no")) == "no":
        problems.append("trainer: a one-shot job; the training worker must keep running (and be restarted)")
    # The app writes a run's folder, the trainer trains in it: one volume, writable by both.
    mounts = {}
    for name in ("app", "trainer"):
        folder = d.env_of(name).get("LONGREAD_TRAINING_DIR") if name in d.services else None
        mounts[name] = next(
            (str(v) for v in d.services.get(name, {}).get("volumes", []) if str(v).split(":")[1:2] == [folder]), None
        )
        if mounts[name] is None or mounts[name].endswith(":ro"):
            problems.append(f"{name}: LONGREAD_TRAINING_DIR ({folder}) is not on a writable volume")
    if len({str(m).split(":")[0] for m in mounts.values()}) != 1:
        problems.append(f"app and trainer do not share the training runs' volume: {mounts}")
    return problems


def _secret_value_problems(where: str, value: str) -> list[str]:
    """A secret's value must be variable references only, none with a non-empty default."""
    problems = []
    refs = list(references(value))
    if _REF.sub("", value).strip():
        problems.append(f"{where}: a literal secret value")
    for ref in refs:
        if ref.op in (":-", "-") and ref.arg or ref.op in (":+", "+"):
            problems.append(f"{where}: ${{{ref.name}{ref.op}…}} gives the secret a default")
    return problems


def check_no_default_secret(d: Deployment) -> list[str]:
    problems = []
    # 1. Every reference to a secret-named variable: required or empty by default, never a value.
    for path, s in walk_strings(d.raw):
        for ref in references(s):
            if SECRET_NAME.search(ref.name) and (ref.op in (":-", "-") and ref.arg or ref.op in (":+", "+")):
                problems.append(f"{'/'.join(map(str, path))}: ${{{ref.name}{ref.op}{ref.arg}}} is a default secret")
    for name, svc in (d.raw.get("services") or {}).items():
        problems += _service_secret_problems(d, name, svc)
    # 4. The compose file's variables get no secret from .env.example either.
    for key, value in d.env.items():
        if SECRET_NAME.search(key) and value:
            problems.append(f".env.example: {key} has a value; leave secrets empty")
    return problems + _unrequired_secret_problems(d)


def _service_secret_problems(d: Deployment, name: str, svc: dict) -> list[str]:
    problems = []
    # 2. Secret-named environment entries hold variables, not values.
    for key, value in d.raw_env_of(name).items():
        if SECRET_NAME.search(key):
            problems += _secret_value_problems(f"{name}: {key}", value)
    # 3. Passwords inside URLs and secrets on command lines.
    for _, s in walk_strings(svc):
        for m in re.finditer(r"://[^:/@\s]*:([^@\s]+)@", s):
            problems += _secret_value_problems(f"{name}: password in {s!r}", m[1])
    command = svc.get("command") or []
    words = shlex.split(command) if isinstance(command, str) else list(map(str, command))
    for flag, value in zip(words, words[1:]):
        if flag.startswith("-") and SECRET_NAME.search(flag.lstrip("-").replace("-", "_")):
            problems += _secret_value_problems(f"{name}: {flag}", value)
    return problems


def _unrequired_secret_problems(d: Deployment) -> list[str]:
    """5. Interpolated with .env.example as it is (secrets empty), the required secrets stop compose."""
    problems = []
    for secret in PLACEHOLDER_SECRETS:
        env = {**d.env, **PLACEHOLDER_SECRETS, secret: ""}
        try:
            d.interpolated(env)
        except MissingVariable as exc:
            if exc.name != secret:
                problems.append(f"without {secret}, compose stops on {exc.name} instead")
        else:
            problems.append(f"compose starts without {secret}: it must be ${{{secret}:?message}}")
    return problems


def check_env_documented(d: Deployment) -> list[str]:
    used, documented = d.variables, set(d.env)
    return [f"${{{name}}} is used but not in .env.example" for name in sorted(used - documented)] + [
        f".env.example lists {name}, which the compose file does not use" for name in sorted(documented - used)
    ]


def check_longread_variables_are_settings(d: Deployment) -> list[str]:
    real = {f"LONGREAD_{name.upper()}" for name in Settings.model_fields}
    names = set(d.variables) | set(d.env)
    for name in d.services:
        names |= set(d.env_of(name))
    names |= set(re.findall(r"\b(LONGREAD_[A-Z0-9_]+)=", d.dockerfile))
    return [
        f"{name} is not a setting (app/settings.py has no field {name[9:].lower()!r})"
        for name in sorted(n for n in names if n.startswith("LONGREAD_") and n not in real)
    ]


def check_image(d: Deployment) -> list[str]:
    problems = []
    lines = [line.strip() for line in re.sub(r"\\\n", " ", d.dockerfile).splitlines()]
    if not any(re.match(r"FROM\s+python:3\.11-slim\b", line, re.I) for line in lines):
        problems.append("Dockerfile: not FROM python:3.11-slim")
    users = [line.split()[1] for line in lines if re.match(r"USER\s", line, re.I)]
    if not users or users[-1].split(":")[0] in ("root", "0"):
        problems.append("Dockerfile: the image runs as root (no final non-root USER)")
    for line in lines:
        m = re.match(r"(ENV|ARG)\s+(.*)", line, re.I)
        if not m:
            continue
        names = re.findall(r"(?:^|\s)([A-Za-z_][A-Za-z0-9_]*)=", m[2]) if "=" in m[2] else m[2].split()[:1]
        for name in names:
            if SECRET_NAME.search(name):
                problems.append(f"Dockerfile: {m[1].upper()} {name} would bake a secret into the image")
    if not any(re.match(r"HEALTHCHECK\s.*?/healthz", line, re.I) for line in lines):
        problems.append("Dockerfile: no HEALTHCHECK on /healthz")
    ignored = {line.strip() for line in d.dockerignore.splitlines() if line.strip() and not line.startswith("#")}
    for pattern in (".venv*", ".longread", "runs", ".git", ".env"):
        if pattern not in ignored:
            problems.append(f".dockerignore: {pattern} is not excluded")
    return problems


CHECKS = [
    check_schema,
    check_required_services,
    check_health,
    check_depends_on,
    check_data_services,
    check_vllm,
    check_app_environment,
    check_commands,
    check_scalable_worker,
    check_shared_uploads,
    check_trainer,
    check_no_default_secret,
    check_env_documented,
    check_longread_variables_are_settings,
    check_image,
]


@pytest.fixture(scope="module")
def deployment() -> Deployment:
    return Deployment.from_repo()


@pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.__name__)
def test_deployment(deployment, check):
    assert check(deployment) == []


def test_interpolation_follows_compose():
    env = {"SET": "x", "EMPTY": ""}
    assert interpolate("${SET:-d} ${EMPTY:-d} ${UNSET:-d} ${EMPTY-d} ${UNSET-d}", env) == "x d d  d"
    assert interpolate("$$SET ${SET:+y} ${EMPTY:+y} ${UNSET:-${SET}} $SET", env) == "$SET y  x x"
    with pytest.raises(MissingVariable, match="EMPTY: say"):
        interpolate("${EMPTY:?say}", env)
    assert interpolate("${EMPTY?say}", env) == ""
    assert [r.name for r in references("$$A ${B:-${C}} $D")] == ["B", "C", "D"]


# --- each check can fail: one break per check ---------------------------------------------------------------


def _text(file: str, old: str, new: str) -> Callable[[Deployment], Deployment]:
    def mutate(d: Deployment) -> Deployment:
        text = getattr(d, file)
        assert old in text, f"mutation target {old!r} is no longer in {file}: update this test"
        return replace(d, **{file: text.replace(old, new, 1)})

    return mutate


def _edit(f: Callable[[dict], None]) -> Callable[[Deployment], Deployment]:
    return lambda d: replace(d, edit=f)


def _svc(name: str, f: Callable[[dict], None]) -> Callable[[Deployment], Deployment]:
    return _edit(lambda data: f(data["services"][name]))


MUTATIONS = {
    "schema: unknown key": (check_schema, _svc("app", lambda s: s.update(restart_policy="always"))),
    "schema: wrong type": (check_schema, _svc("redis", lambda s: s["healthcheck"].update(interval=5))),
    "no worker service": (check_required_services, _edit(lambda d: d["services"].pop("worker"))),
    "no trainer service": (check_required_services, _edit(lambda d: d["services"].pop("trainer"))),
    "worker without health check": (check_health, _svc("worker", lambda s: s.pop("healthcheck"))),
    "redis health check disabled": (check_health, _svc("redis", lambda s: s.update(healthcheck={"disable": True}))),
    "worker probes /healthz": (
        check_health,
        _svc(
            "worker",
            lambda s: s["healthcheck"].update(test=["CMD", "python", "-c", "urlopen('http://127.0.0.1:8000/healthz')"]),
        ),
    ),
    "depends_on without condition": (check_depends_on, _svc("app", lambda s: s.update(depends_on=["postgres"]))),
    "service_started": (
        check_depends_on,
        _svc("worker", lambda s: s["depends_on"]["vllm"].update(condition="service_started")),
    ),
    "worker does not wait for vllm": (check_depends_on, _svc("worker", lambda s: s["depends_on"].pop("vllm"))),
    "redis without AOF": (check_data_services, _svc("redis", lambda s: s.update(command=["redis-server"]))),
    "postgres without volume": (check_data_services, _svc("postgres", lambda s: s.pop("volumes"))),
    "vllm without GPU": (check_vllm, _svc("vllm", lambda s: s.pop("deploy"))),
    "vllm fixed tensor parallelism": (
        check_vllm,
        _text("compose_text", "--tensor-parallel-size ${VLLM_TENSOR_PARALLEL_SIZE:-1}", "--tensor-parallel-size 1"),
    ),
    "vllm other model": (check_vllm, _text("env_example", f"VLLM_MODEL={DEFAULT_MODEL}", "VLLM_MODEL=Qwen/Qwen2.5-7B")),
    "engine not openai": (
        check_app_environment,
        _text("compose_text", "LONGREAD_ENGINE: openai", "LONGREAD_ENGINE: vllm-local"),
    ),
    "wrong vllm url": (check_app_environment, _text("compose_text", "http://vllm:8000/v1", "http://vllm:8001/v1")),
    "secret key with a default": (
        check_app_environment,
        _text("compose_text", "${LONGREAD_SECRET_KEY:?set LONGREAD_SECRET_KEY in .env}", "${LONGREAD_SECRET_KEY:-dev}"),
    ),
    "app spawns a worker": (check_commands, _svc("app", lambda s: s.update(command=["longread", "serve"]))),
    "unknown CLI flag": (
        check_commands,
        _svc("worker", lambda s: s.update(command=["longread", "worker", "--queue", "x"])),
    ),
    "worker container_name": (check_scalable_worker, _svc("worker", lambda s: s.update(container_name="worker"))),
    "worker host port": (check_scalable_worker, _svc("worker", lambda s: s.update(ports=["9000:9000"]))),
    "uploads not shared": (check_shared_uploads, _svc("worker", lambda s: s.update(volumes=["other:/data"]))),
    "trainer without profile": (check_trainer, _svc("trainer", lambda s: s.pop("profiles"))),
    "trainer one-shot": (check_trainer, _svc("trainer", lambda s: s.update(restart="no"))),
    "training dir read-only": (
        check_trainer,
        _svc("app", lambda s: s.update(volumes=[v.replace("runs:/runs", "runs:/runs:ro") for v in s["volumes"]])),
    ),
    "trainer reads documents": (check_commands, _svc("trainer", lambda s: s.update(command=["longread", "worker"]))),
    "trainer without health check": (check_health, _svc("trainer", lambda s: s.pop("healthcheck"))),
    "literal postgres password": (
        check_no_default_secret,
        _svc("postgres", lambda s: s["environment"].update(POSTGRES_PASSWORD="longread")),
    ),
    "password default": (
        check_no_default_secret,
        _text(
            "compose_text", "${POSTGRES_PASSWORD:?set POSTGRES_PASSWORD in .env}@", "${POSTGRES_PASSWORD:-longread}@"
        ),
    ),
    "password in a URL": (
        check_no_default_secret,
        _svc("worker", lambda s: s["environment"].update(LONGREAD_BROKER_URL="redis://:hunter2@redis:6379/0")),
    ),
    "secret on a command line": (
        check_no_default_secret,
        _svc("vllm", lambda s: s.update(command="--model x --api-key sk-123")),
    ),
    "secret in .env.example": (check_no_default_secret, _text("env_example", "\nHF_TOKEN=\n", "\nHF_TOKEN=hf_abc\n")),
    "undocumented variable": (
        check_env_documented,
        _svc("worker", lambda s: s.update(stop_grace_period="${WORKER_GRACE:-30s}")),
    ),
    "stale documentation": (
        check_env_documented,
        _text("env_example", "\nHTTP_PORT=8000\n", "\nHTTP_PORT=8000\nOLD_THING=1\n"),
    ),
    "not a setting": (
        check_longread_variables_are_settings,
        _svc("app", lambda s: s["environment"].update(LONGREAD_WORKERS="4")),
    ),
    "root image": (check_image, _text("dockerfile", "\nUSER longread\n", "\nUSER root\n")),
    "secret ARG": (
        check_image,
        _text("dockerfile", "\nARG TORCH_VERSION=2.13.0\n", "\nARG TORCH_VERSION=2.13.0\nARG HF_TOKEN\n"),
    ),
    "no healthcheck in image": (check_image, _text("dockerfile", "HEALTHCHECK", "# HEALTHCHECK")),
    ".env in the build context": (check_image, _text("dockerignore", "\n.env\n", "\n")),
}


@pytest.mark.parametrize("mutation", MUTATIONS, ids=list(MUTATIONS))
def test_mutation_is_caught(deployment, mutation):
    check, mutate = MUTATIONS[mutation]
    assert check(deployment) == [], "the real files must pass before a break can be told apart"
    assert check(mutate(deployment)) != [], f"{check.__name__} did not notice: {mutation}"


def test_every_check_has_a_mutation():
    assert {check for check, _ in MUTATIONS.values()} == set(CHECKS)
