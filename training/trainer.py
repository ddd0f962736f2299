"""The training loop: optional SFT warm start on oracle memory traces, then multi-conversation GRPO.

One RL step, as MemAgent trains (arXiv 2507.02259, §3) with DAPO's refinements:
1. draw `samples_per_step` tasks (document, question, gold answers) for this step;
2. read each `group_size` times with the current policy through our own agent (`read_batch`:
   every rollout of every task advances in one batched engine call per chunk), sampling at
   `temperature`; a rollout is its K chunk conversations and the final one;
3. score only the final answer (rule-based verifier); advantage = reward − group mean (÷ std
   optionally); groups whose rewards are all equal are dropped and counted;
4. every generated token of every conversation of a rollout gets that rollout's advantage; the
   loss is the token-level clipped surrogate (+ β·k3 KL to the reference), averaged over all
   tokens of the step, accumulated over micro-batches of at most `micro_batch_tokens`.

Departures from textbook PPO/GRPO, on purpose: no value model, no entropy bonus; by default one
update per batch of rollouts (the sampling and trained policies are the same fp32 model, so the
ratio is exactly 1 and clipping only acts with `updates_per_batch` > 1).

Each step draws its tasks and seeds its sampling from (seed, step) alone, so the data position
of a run is its step number: resuming needs only the adapter, the optimizer and that number.

Under `accelerate launch` / torchrun (torch.distributed initialised), every process draws the same
tasks and takes every world-th one (a group never straddles processes); the loss is normalised by
the token count of the whole step across processes and the gradients are summed, so N processes
make the same update as one process on the same batch. Only rank 0 writes.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

import torch

from inference.agent import AgentConfig, MemoryAgent, Trajectory
from inference.chunking import split_into_chunks
from inference.engines.transformers_engine import TransformersEngine
from training.algorithms import clipped_policy_loss, group_advantages, informative_groups, k3_kl
from training.answer_rows import extractive_answer_rows
from training.config import TrainConfig
from training.policy import (
    Row,
    completion_log_probs,
    decoding_copy,
    distributed,
    fewer_anchors,
    load_policy,
    micro_batches,
    pick_device,
    prompt_ids,
    reference_log_probs,
    refresh_decoding_copy,
    run_precision,
    sft_loss,
    target_ids,
)
from training.rollout_server import VLLMRollouts, copy_adapter
from training.run_folder import (
    FINAL_ADAPTER,
    append_record,
    load_checkpoint,
    progress_line,
    save_adapter,
    save_checkpoint,
)
from training.tasks import (
    NO_EVIDENCE_MEMORY,
    SYNTHETIC_KINDS,
    Task,
    corrections,
    evidence_gains,
    oracle_answer,
    oracle_memories,
    passage_memory,
    question_echo,
    with_answer_evidence,
)
from training.tracking import Tracker, tracking_root
from training.verifier import predicted_answer, reward, score
from training.weights import resolve_adapter

Draw = Callable[[int, int], list[Task]]  # (step, how many) -> tasks for that step, deterministic


@dataclass
class StepResult:
    metrics: dict[str, Any]
    sample: dict[str, Any] | None = None


class Trainer:
    def __init__(
        self,
        config: TrainConfig,
        run_dir: Path,
        model_path: Path,
        draw: Draw,
        log: Callable[[str], None] = print,
        rollout_server: VLLMRollouts | None = None,
    ):
        self.config = config
        self.run_dir = Path(run_dir)
        self.draw = draw
        self.log = log
        if config.threads:
            torch.set_num_threads(config.threads)
        self.device = pick_device(config.device)
        self.precision = run_precision(config.precision, self.device.type)
        if self.device.type == "cuda":
            torch.cuda.set_device(self.device)
            torch.backends.cuda.matmul.allow_tf32 = True  # float32 weights, TF32 matmuls: ~8x on Hopper
        start = resolve_adapter(config.init_adapter) if config.init_adapter is not None else None
        self.model, self.tokenizer = load_policy(
            model_path,
            config.lora_r,
            config.lora_alpha,
            config.lora_dropout,
            config.lora_targets,
            start,
            config.seed,
            self.device,
        )
        self.reference = self.anchor = None
        if config.sft_anchor > 0 and config.sft_steps:  # the starting model, frozen
            self.anchor, _ = load_policy(
                model_path, config.lora_r, config.lora_alpha, 0.0, config.lora_targets, start, config.seed, self.device
            )
            self.anchor.eval().requires_grad_(False)
        if config.lora_r == 0 and config.kl_coef > 0:
            self.reference, _ = load_policy(model_path, 0, 1, 0.0, [], None, config.seed, self.device)
            self.reference.eval()
        self.params = [p for p in self.model.parameters() if p.requires_grad]
        self.optimizer = torch.optim.AdamW(self.params, lr=config.learning_rate, weight_decay=config.weight_decay)
        self.pad_id = (
            self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else self.tokenizer.eos_token_id
        )
        self.agent = MemoryAgent(
            TransformersEngine.from_model(self.model, self.tokenizer, max_batch=config.rollout_batch),
            AgentConfig.of(config),
        )
        self.rollout_server = rollout_server
        self._decoding_agent: MemoryAgent | None = None
        self.step = 0
        self.dist = distributed()
        if self.dist and rollout_server:
            raise ValueError("rollout_engine vllm runs in one process; launch it without torchrun/accelerate")
        self.rank = self.dist.get_rank() if self.dist else 0
        self.world = self.dist.get_world_size() if self.dist else 1
        #: the experiment tracker's folder of this run (training/tracking.py): every step's metrics
        self.tracking_dir = tracking_root() / "train" / self.run_dir.name

    # --- the run -------------------------------------------------------------------------------

    @property
    def total_steps(self) -> int:
        return self.config.sft_steps + self.config.rl_steps

    def resume(self) -> None:
        """Continue from the run folder's last checkpoint (metrics past it are dropped, then redone)."""
        self.step = load_checkpoint(self.run_dir, self.model, self.optimizer, self.device)

    def run(self, max_steps: int | None = None, should_stop: Callable[[], bool] = lambda: False) -> None:
        """Train to the end (or `max_steps` more steps), saving every `save_every` steps and at the end.
        `should_stop` is asked between steps: True saves a checkpoint (if the last step has none) and returns."""
        self.run_dir.mkdir(parents=True, exist_ok=True)
        tracker = None
        if self.rank == 0:
            (self.run_dir / "config.json").write_text(self.config.model_dump_json(indent=2))
            tracker = Tracker(self.tracking_dir, resume_step=self.step)
            if self.step == 0:
                tracker.text("config", f"```\n{self.config.model_dump_json(indent=2)}\n```")
        try:
            self._run_steps(max_steps, should_stop, tracker)
        finally:
            if tracker:
                tracker.close()
        if self.step == self.total_steps and self.rank == 0:
            save_adapter(self.model, self.tokenizer, self.run_dir / FINAL_ADAPTER)
        if self.dist:
            self.dist.barrier()

    def _run_steps(self, max_steps: int | None, should_stop: Callable[[], bool], tracker: Tracker | None) -> None:
        stop = self.total_steps if max_steps is None else min(self.total_steps, self.step + max_steps)
        started, first = time.monotonic(), self.step
        while self.step < stop:
            if should_stop():
                if self.step > first and self.step % self.config.save_every and self.rank == 0:
                    save_checkpoint(self.run_dir, self.model, self.optimizer, self.step)
                break
            t0 = time.monotonic()
            result = self.sft_step() if self.step < self.config.sft_steps else self.rl_step()
            self.step += 1
            m = result.metrics
            m.update(step=self.step, seconds=round(time.monotonic() - t0, 2), lr=self._lr(self.step - 1))
            per_step = (time.monotonic() - started) / (self.step - first)
            m["eta_s"] = round(per_step * (stop - self.step))
            if self.rank == 0:
                append_record(self.run_dir, "metrics.jsonl", m)
                if tracker:
                    tracker.scalars({k: v for k, v in m.items() if k != "step"}, self.step, prefix=f"{m['phase']}/")
                if result.sample:
                    append_record(self.run_dir, "samples.jsonl", {"step": self.step, **result.sample})
                self.log(progress_line(m, self.total_steps))
            if (self.step % self.config.save_every == 0 or self.step == stop) and self.rank == 0:
                save_checkpoint(self.run_dir, self.model, self.optimizer, self.step)

    def _lr(self, step: int) -> float:
        c = self.config
        peak, local = (c.sft_learning_rate, step) if step < c.sft_steps else (c.learning_rate, step - c.sft_steps)
        return peak * min(1.0, (local + 1) / (c.warmup_steps + 1))

    # --- SFT -----------------------------------------------------------------------------------

    def sft_rows(self, tasks: Sequence[Task], readings: dict[str, list[str]] | None = None) -> list[Row]:
        """Conversations of the oracle readings: every one where the memory gains evidence, `sft_keeps` where it
        must be kept as it is (drawn at random), `sft_carry` more where what it keeps is evidence, `sft_echoes` from
        an echo of the question up to the first evidence, and the final answer. Most chunks gain nothing, so
        training on all of them would spend the CPU on copying. A task without evidence (feedback, QA files) takes
        its answer's sentence as evidence, or is left out when the answer is not in its document. `readings` (task
        id -> the policy's own memories) adds up to `sft_corrections` conversations a task where the policy went
        wrong. Under the extractive memory, only the answer (training/answer_rows.py)."""
        if self.config.memory_policy == "extractive":
            return extractive_answer_rows(self.agent, self.tokenizer, tasks, gate=self.config.sft_answers_supported)
        rows = []
        for task in filter(None, map(with_answer_evidence, tasks)):
            rng = random.Random(f"{self._seed()}:{task.id}")
            chunks = [
                c.text(task.document)
                for c in split_into_chunks(task.document, self.tokenizer, self.config.chunk_tokens)
            ]
            memories = oracle_memories(task, chunks)
            previous: list[str | None] = [None, *memories[:-1]]
            gains = evidence_gains(memories)
            keeps = [k for k in range(len(chunks)) if k not in gains]
            chosen = rng.sample(keeps, min(self.config.sft_keeps, len(keeps)))
            carries = [k for k in keeps if k not in chosen and previous[k] not in (None, NO_EVIDENCE_MEMORY)]
            chosen += rng.sample(carries, min(self.config.sft_carry, len(carries)))
            conversations = [(previous[k], k) for k in sorted(gains + chosen)]
            if self.config.sft_echoes and gains:
                before = rng.sample(range(gains[0]), min(self.config.sft_echoes - 1, gains[0]))
                conversations += [(question_echo(task.question), k) for k in sorted(before) + gains[:1]]
            policy = (readings or {}).get(task.id)
            if policy and len(policy) == len(chunks):
                fixes = corrections(memories, policy, chunks, self.config.sft_corrections, rng)
                conversations += [(policy[k - 1] if k else None, k) for k in fixes]
            updates = self.config.sft_updates == "all" or (
                self.config.sft_updates == "planted" and task.kind in SYNTHETIC_KINDS
            )
            for memory, k in conversations if updates or self.anchor is not None else ():
                (message,) = self.agent.update_messages([(task.question, memory, chunks[k])])
                prompt, target = prompt_ids(self.tokenizer, message), target_ids(self.tokenizer, memories[k])
                rows.append(Row(prompt, target, anchor=not updates))
            finals = [memories[-1]]
            if self.config.sft_passage_answers:
                finals.append(passage_memory(task, memories[-1], self.tokenizer, self.config.memory_tokens, rng))
            answer = target_ids(self.tokenizer, oracle_answer(task))
            for memory in filter(None, finals):
                (final,) = self.agent.final_messages([(task.question, memory)])
                rows.append(Row(prompt_ids(self.tokenizer, final), answer))
        return rows

    def sft_step(self) -> StepResult:
        tasks = self._mine(self.draw(self.step, self.config.sft_samples_per_step))
        read: dict[str, Any] = {}
        readings = self._greedy_readings(tasks, read) if self.config.sft_corrections else None
        rows = fewer_anchors(self.sft_rows(tasks, readings), self.config.sft_anchor_rows, random.Random(self._seed()))
        anchored = self._sum(sum(len(r.completion_ids) for r in rows if r.anchor))
        taught = self._sum(sum(len(r.completion_ids) for r in rows if not r.anchor))
        self._set_lr()
        self.optimizer.zero_grad(set_to_none=True)
        loss_sum = kl_sum = 0.0
        t0 = time.monotonic()
        for batch in micro_batches(rows, self.config.micro_batch_tokens):
            with self._autocast():
                loss, kl = sft_loss(
                    self.model, self.anchor, batch, self.pad_id, taught, anchored, self.config.sft_anchor
                )
            loss.backward()
            loss_sum += loss.item()
            kl_sum += kl
        grad_norm = self._optimizer_step()
        tokens = self._sum(sum(r.tokens for r in rows))
        return StepResult(
            dict(
                phase="sft",
                loss=round(self._sum(loss_sum), 4),
                conversations=int(self._sum(len(rows))),
                **({"anchor_kl": round(self._sum(kl_sum) / max(1, anchored), 5)} if self.anchor is not None else {}),
                tokens=int(tokens),
                **read,
                tokens_per_s=round(tokens / (time.monotonic() - t0), 1),
                grad_norm=grad_norm,
            )
        )

    def _greedy_readings(self, tasks: Sequence[Task], metrics: dict[str, Any]) -> dict[str, list[str]]:
        """The policy's own greedy reading of each task (its memories, by task id), for `sft_corrections`;
        how those readings score goes into `metrics` (reward, accuracy: a curve of SFT on the policy)."""
        tasks = [t for t in map(with_answer_evidence, tasks) if t]
        t0 = time.monotonic()
        trajectories = self._policy_agent().read_batch([(t.question, t.document) for t in tasks])
        n = self._sum(len(tasks))
        metrics.update(
            reward=round(
                self._sum(
                    sum(
                        reward(r.answer.output, t.answers, self.config.reward_rule) for t, r in zip(tasks, trajectories)
                    )
                )
                / max(1, n),
                4,
            ),
            accuracy=round(
                self._sum(
                    sum(
                        score(predicted_answer(r.answer.output), t.answers, "exact_match")
                        for t, r in zip(tasks, trajectories)
                    )
                )
                / max(1, n),
                4,
            ),
            rollout_s=round(time.monotonic() - t0, 1),
        )
        return {t.id: r.memories for t, r in zip(tasks, trajectories)}

    # --- RL ------------------------------------------------------------------------------------

    def rollouts(self, tasks: Sequence[Task]) -> list[list[Trajectory]]:
        """`group_size` sampled readings of each task, all advancing together."""
        g = self.config.group_size
        items = [(t.question, t.document) for t in tasks for _ in range(g)]
        torch.manual_seed(self._seed())
        trajectories = self._policy_agent().read_batch(items, temperature=self.config.temperature)
        return [trajectories[i * g : (i + 1) * g] for i in range(len(tasks))]

    def _policy_agent(self) -> MemoryAgent:
        """The agent on the policy as it is now: in this process, on a plain copy of its weights in the
        compute dtype (training/policy.py, `decoding_copy`), or on the rollout server, which hot-loads the
        current adapter."""
        if not self.rollout_server:
            if self._decoding_agent is None:
                engine = TransformersEngine.from_model(
                    decoding_copy(self.model, self.precision), self.tokenizer, max_batch=self.config.rollout_batch
                )
                self._decoding_agent = MemoryAgent(engine, self.agent.config)
            refresh_decoding_copy(self._decoding_agent.engine.model, self.model)
            return self._decoding_agent
        adapter = copy_adapter(self.model, self.run_dir / "rollout-adapter")
        return MemoryAgent(self.rollout_server.engine(adapter, f"policy-{self.step}"), self.agent.config)

    def rl_step(self) -> StepResult:
        c = self.config
        tasks = self._mine(self.draw(self.step, c.samples_per_step))
        t0 = time.monotonic()
        groups = self.rollouts(tasks)
        rollout_s = time.monotonic() - t0
        rewards = torch.tensor(
            [
                [reward(t.answer.output, task.answers, c.reward_rule) for t in group]
                for task, group in zip(tasks, groups)
            ]
        )
        exact = [
            score(predicted_answer(t.answer.output), task.answers, "exact_match")
            for task, group in zip(tasks, groups)
            for t in group
        ]
        advantages = group_advantages(rewards, c.scale_advantage_by_std)
        keep = informative_groups(rewards) if c.filter_equal_groups else torch.ones(len(tasks), dtype=torch.bool)
        rows = []
        for gi in keep.nonzero().flatten().tolist():
            for ri, trajectory in enumerate(groups[gi]):
                for message, completion in zip(trajectory.messages, trajectory.completions):
                    if completion.token_ids:
                        rows.append(
                            Row(
                                prompt_ids(self.tokenizer, message),
                                list(completion.token_ids),
                                advantage=float(advantages[gi, ri]),
                            )
                        )
        generated = sum(len(comp.token_ids) for group in groups for t in group for comp in t.completions)
        memories = [len(comp.token_ids) for group in groups for t in group for comp in t.completions[:-1]]
        n = self._sum(rewards.numel())
        metrics = dict(
            phase="rl",
            reward=round(self._sum(rewards.sum().item()) / n, 4),
            accuracy=round(self._sum(sum(exact)) / n, 4),
            groups=int(self._sum(len(tasks))),
            groups_filtered=int(self._sum(int((~keep).sum()))),
            rollout_s=round(rollout_s, 1),
            generated_tokens=int(self._sum(generated)),
            memory_tokens_mean=round(self._sum(sum(memories)) / max(1, self._sum(len(memories))), 1),
            doc_tokens=max(t.doc_tokens for t in tasks),
        )
        metrics.update(self._policy_update(rows))
        best = int(rewards.flatten().argmax())
        t, task = groups[best // c.group_size][best % c.group_size], tasks[best // c.group_size]
        sample = dict(
            question=task.question,
            gold=list(task.answers),
            memories=t.memories,
            answer=t.answer.answer,
            reward=float(rewards.flatten()[best]),
        )
        return StepResult(metrics, sample)

    def _policy_update(self, rows: list[Row]) -> dict[str, Any]:
        c = self.config
        total = self._sum(sum(len(r.completion_ids) for r in rows))
        if not total:  # every group filtered, on every process
            self._set_lr()
            return dict(loss=0.0, kl=0.0, clip_fraction=0.0, trained_tokens=0, tokens_per_s=0.0)
        batches = list(micro_batches(rows, c.micro_batch_tokens))
        if c.kl_coef > 0 or c.updates_per_batch > 1:
            with torch.no_grad(), self._autocast():
                for batch in batches:
                    if c.updates_per_batch > 1:
                        for r, lp in zip(batch, completion_log_probs(self.model, batch, self.pad_id, c.temperature)):
                            r.old_log_probs = lp
                    if c.kl_coef > 0:
                        for r, lp in zip(
                            batch, reference_log_probs(self.model, batch, self.pad_id, self.reference, c.temperature)
                        ):
                            r.ref_log_probs = lp
        t0 = time.monotonic()
        loss_sum = kl_sum = clipped = 0.0
        for _ in range(c.updates_per_batch):
            self._set_lr()
            self.optimizer.zero_grad(set_to_none=True)
            loss_sum = kl_sum = clipped = 0.0
            for batch in batches:
                with self._autocast():
                    log_probs = completion_log_probs(self.model, batch, self.pad_id, c.temperature)
                loss = torch.zeros((), device=self.device)
                for r, lp in zip(batch, log_probs):
                    old = r.old_log_probs if r.old_log_probs is not None else lp.detach()
                    adv = torch.full_like(lp, r.advantage)
                    pg, was_clipped = clipped_policy_loss(lp, old, adv, c.eps_low, c.eps_high)
                    loss = loss + pg.sum()
                    clipped += was_clipped.sum().item()
                    if c.kl_coef > 0:
                        kl = k3_kl(lp, r.ref_log_probs)
                        loss = loss + c.kl_coef * kl.sum()
                        kl_sum += kl.sum().item()
                loss = loss / total
                loss.backward()
                loss_sum += loss.item()
            grad_norm = self._optimizer_step()
        tokens = int(self._sum(sum(r.tokens for r in rows)))
        return dict(
            loss=round(self._sum(loss_sum), 5),
            kl=round(self._sum(kl_sum) / total, 6),
            clip_fraction=round(self._sum(clipped) / total, 4),
            trained_tokens=tokens,
            grad_norm=grad_norm,
            tokens_per_s=round(tokens * c.updates_per_batch / (time.monotonic() - t0), 1),
        )

    # --- shared --------------------------------------------------------------------------------

    def _autocast(self) -> torch.autocast:
        """Forward passes in `precision` (weights and gradients stay float32)."""
        return torch.autocast(self.device.type, dtype=torch.bfloat16, enabled=self.precision == "bfloat16")

    def _seed(self) -> int:
        return self.config.seed * 1_000_003 + self.step

    def _set_lr(self) -> None:
        for group in self.optimizer.param_groups:
            group["lr"] = self._lr(self.step)

    def _mine(self, tasks: list[Task]) -> list[Task]:
        """This process's share of the step's tasks (all of them without torch.distributed)."""
        return tasks[self.rank :: self.world]

    def _sum(self, value: float) -> float:
        """`value` summed over every process."""
        if not self.dist:
            return value
        t = torch.tensor(float(value), dtype=torch.float64, device=self.device)  # nccl reduces GPU tensors
        self.dist.all_reduce(t)
        return t.item()

    def _optimizer_step(self) -> float:
        if self.dist:  # each process's loss is already ÷ the global token count: summing gives the mean
            for p in self.params:
                if p.grad is None:
                    p.grad = torch.zeros_like(p)
                self.dist.all_reduce(p.grad)
        norm = torch.nn.utils.clip_grad_norm_(self.params, self.config.max_grad_norm)
        self.optimizer.step()
        return round(float(norm), 4)
