"""Request-level serving simulation on :class:`fabricsim.des.EventLoop` (layer L5).

Each model replica runs a vLLM-style continuous-batching scheduler (Kwon et al., SOSP'23; vLLM v1
chunked prefill): every step takes all running decode sequences (one token each), then continues
partially prefilled prompts and admits waiting requests, chunking prompts so that a step never
exceeds ``token_budget`` tokens (``max_num_batched_tokens``). KV blocks are allocated on demand;
when the cache overflows, the newest running request is preempted and recomputed later (vLLM's
default ``recompute`` preemption). ``reserve_full=True`` instead admits a request only when the
blocks for its whole prompt + output are free and never preempts (TensorRT-LLM's default
``GUARANTEED_NO_EVICT`` capacity scheduler). A router sends each arrival to the replica with the
fewest outstanding requests (ties: lowest index). With disaggregation, prefill replicas only
prefill; a finished prompt's KV crosses the fabric (an alpha-beta fit of
:class:`fabricsim.collectives.times.CollectiveTimes` send/recv, per GPU shard, in parallel, or
timed on the fabric by a :class:`StepNetwork`) to the decode replica least loaded when it leaves
(hand-offs on their way count), which decodes it. The first token reaches the user when the KV has
arrived (vLLM's disaggregated-prefill proxy and NVIDIA Dynamo stream every token from the decode
worker), so TTFT includes the hand-off. With a shared CXL pool
(:mod:`fabricsim.engine.inference.kv_pool`) a preempted request's KV is written there while it has
room and fetched back at re-admission (the request resumes instead of recomputing); the transfers
stall the replica's next step.

Per step the work is O(running prefills + admissions + completions): decode contexts are not
walked token by token -- a running sum of contexts grows by the number of decode sequences each
step, and each sequence's finish step is known when it starts decoding (a heap). Mixed replicas
timed on their own touch each other only through arrivals, so a replica books the steps that end
before the next arrival in one event (same results as one event per step, a third of the events).

Serving features (all off by default; the defaults reproduce the behaviour above exactly):

* **Scheduling policy** (:class:`Policy`): ``chunked`` is the above. ``orca`` is iteration-level
  scheduling (Yu et al., OSDI'22): requests join and leave the batch at every step but a prompt is
  never chunked -- a step takes whole remaining prompts while they fit in the token budget, and at
  least one prompt when no other prompt is in the step (so a prompt longer than the budget runs,
  that step exceeding the budget by it). ``static`` is request-level batching (FasterTransformer):
  a replica admits up to ``max_batch`` waiting requests only when it is empty, prefills all of
  them in one step (the context phase; the token budget does not apply) and decodes until the last
  of them finishes; arrivals wait.
* **Prefix caching** (``shared_prefix`` = f): the first ``floor(f x prompt)`` tokens of every prompt
  (at most ``prompt - 1``: the last token is always computed for its logits, as vLLM does) are a
  prefix of one system prompt shared by all requests. A mixed or prefill replica caches, when a
  prompt finishes, its prefix up to the longest seen; those KV tokens are counted once in the KV
  budget and never evicted (the request hands them to the cache). A request admitted later computes
  only the tokens beyond the cached part (its chunks attend the cached tokens). A hit is a request
  whose whole prefix was cached at its admission. Decode replicas of a disaggregated deployment
  receive the full KV and share nothing.
* **Speculative decoding** (:class:`Speculation`, K draft tokens, acceptance rate A): a decoding
  sequence's step verifies K + 1 tokens (K + 1 tokens of the token budget, of the step's linear
  work and logits, and K + 1 queries over its context) and yields on average
  ``tokens_per_step(K, A) = (1 - A^(K+1)) / (1 - A)`` tokens (Leviathan et al., ICML'23, eq. 1). The
  yield is deterministic: by the end of replica step ``s`` every decoding sequence has received
  ``floor((s + 1) E)`` tokens of credit since step 0 (E the expected yield), so each step emits
  ``floor((s + 1) E) - floor(s E)`` tokens per sequence and a sequence's finish step is known when it
  joins. The drafter is an MTP-style module of one transformer layer (DeepSeek-V3 report sec. 2.2:
  one transformer block per MTP depth): each of the K sequential draft passes costs
  ``draft_fraction`` (1 / layers) of a plain decode step of the same sequences.
* **Router** (:class:`Router`): ``least-work`` (default, the router above: fewest outstanding
  requests -- queued, running and KV hand-offs on their way -- not weighed by tokens),
  ``round-robin``, or ``random`` (uniform, seeded by ``ClusterConfig.seed``). Prefill arrivals and
  KV hand-offs to decode replicas are routed by the same policy (separate turns).
"""

from __future__ import annotations

import heapq
import math
import random
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol

import numpy as np

from fabricsim.des import EventLoop
from fabricsim.engine.inference.kv_pool import KvPool, PoolConfig
from fabricsim.engine.inference.serving_summary import (
    Percentiles,
    ServingOutcome,
    ServingSummary,
    percentiles,
    summarize,
)
from fabricsim.transformer.inference import StepWork
from fabricsim.transformer.kv_cache import KV_BLOCK_TOKENS, paged_tokens
from fabricsim.workload.requests import RequestStream

__all__ = [  # the run's summary lives in serving_summary; re-exported for the scheduler's callers
    "ClusterConfig", "Percentiles", "Policy", "Replica", "Role", "Router", "SchedulerConfig", "ServingOutcome",
    "ServingSimulation", "ServingSummary", "Speculation", "StepNetwork", "StepTimer", "percentiles", "summarize",
    "tokens_per_step",
]

StepTimer = Callable[[StepWork], float]


class StepNetwork(Protocol):
    """The fabric a deployment's steps and KV hand-offs cross (see
    :mod:`fabricsim.engine.inference.serving_fabric`): it knows what else is in flight at ``now_s``.
    Replica ``i`` is the ``i``-th GPU block of the deployment (mixed or prefill replicas first)."""

    def step_s(self, replica: int, work: StepWork, now_s: float) -> float:
        """Seconds of replica ``replica``'s step of ``work`` starting at ``now_s``."""
        ...

    def transfer_s(self, source: int, target: int, tokens: int, now_s: float) -> float:
        """Seconds of the KV hand-off of ``tokens`` tokens from replica ``source`` to ``target``."""
        ...


class Policy(StrEnum):
    """How a replica batches (see the module docstring)."""

    CHUNKED = "chunked"
    ORCA = "orca"
    STATIC = "static"


class Router(StrEnum):
    """How arrivals (and KV hand-offs) pick a replica (see the module docstring)."""

    ROUND_ROBIN = "round-robin"
    LEAST_WORK = "least-work"
    RANDOM = "random"


def tokens_per_step(draft_tokens: int, acceptance: float) -> float:
    """Expected tokens one verify step yields with ``draft_tokens`` K drafted tokens each accepted
    with probability ``acceptance`` A (i.i.d.): ``(1 - A^(K+1)) / (1 - A)``, Leviathan et al.
    (ICML'23, "Fast Inference from Transformers via Speculative Decoding"), eq. 1; 1 <= E <= K + 1."""
    if acceptance >= 1.0:
        return float(draft_tokens + 1)
    return (1.0 - acceptance ** (draft_tokens + 1)) / (1.0 - acceptance)


@dataclass(frozen=True, slots=True)
class Speculation:
    """Speculative decoding: ``k`` draft tokens per step accepted with probability ``acceptance``;
    one draft pass costs ``draft_fraction`` of a plain decode step of the same sequences."""

    k: int
    acceptance: float
    draft_fraction: float

    @property
    def tokens_per_step(self) -> float:
        return tokens_per_step(self.k, self.acceptance)


class Role(StrEnum):
    MIXED = "mixed"
    PREFILL = "prefill"
    DECODE = "decode"


@dataclass(frozen=True, slots=True)
class SchedulerConfig:
    """One replica's scheduler: ``token_budget`` tokens and ``max_batch`` running sequences per step,
    ``kv_capacity_tokens`` KV token slots, ``reserve_full`` as TensorRT-LLM's no-evict policy."""

    kv_capacity_tokens: int
    token_budget: int = 8192
    max_batch: int = 1024
    reserve_full: bool = False
    block_tokens: int = KV_BLOCK_TOKENS
    policy: Policy = Policy.CHUNKED
    shared_prefix: float = 0.0
    """Fraction of every prompt that is one shared, cacheable prefix (0: no prefix caching)."""
    speculation: Speculation | None = None


@dataclass(frozen=True, slots=True)
class ClusterConfig:
    """Replicas and their roles; ``transfer_s(tokens)`` is the KV hand-off time P -> D (seconds).
    With ``network`` the steps and hand-offs are timed on the fabric instead (``timer`` and
    ``transfer_s`` unused)."""

    scheduler: SchedulerConfig
    timer: StepTimer
    mixed: int = 1
    prefill: int = 0
    decode: int = 0
    transfer_s: Callable[[int], float] | None = None
    network: StepNetwork | None = None
    kv_pool: PoolConfig | None = None  # a shared CXL pool for evicted KV (engine.inference.kv_pool)
    router: Router = Router.LEAST_WORK
    seed: int = 0
    """Seeds the ``random`` router."""


class _Table:
    """Per-request mutable state (Python lists: fastest scalar access)."""

    def __init__(self, stream: RequestStream, shared_prefix: float = 0.0) -> None:
        n = len(stream)
        self.arrival = stream.arrival_s.tolist()
        self.prompt = stream.input_len.tolist()
        self.out_left = stream.output_len.tolist()
        self.first = [math.nan] * n
        self.finish = [math.nan] * n
        self.token = [-1] * n
        self.start = [0] * n
        self.preemptions = 0
        self.next_token = 0
        # prefix caching: each prompt's shareable prefix, the part of it this request's KV does not
        # own (found cached, or handed to the cache), and whether its whole prefix was found cached
        prefix = np.minimum(np.floor(shared_prefix * stream.input_len), np.maximum(stream.input_len - 1, 0))
        self.prefix = prefix.astype(np.int64).tolist()
        self.shared = [0] * n
        self.hit = [False] * n

    def new_token(self, rid: int) -> int:
        self.next_token += 1
        self.token[rid] = self.next_token
        return self.next_token


class Replica:
    """One model replica's scheduler state; steps are events on the shared loop."""

    def __init__(self, role: Role, config: ClusterConfig, table: _Table, sim: ServingSimulation, index: int) -> None:
        self.role, self.cfg, self.timer, self.index = role, config.scheduler, config.timer, index
        self._decode_s = getattr(config.timer, "decode_s", None)  # a StepTimer's decode-only fast path
        self.network = config.network
        self.table, self.sim, self.loop = table, sim, sim.loop
        self.waiting: deque[int] = deque()
        self.prefilling: deque[list[int]] = deque()
        self.heap: list[tuple[int, int, int]] = []
        self.running: list[tuple[int, int]] = []
        self.n_running = self.n_dec = self.sum_ctx = self.kv_used = self.step_no = 0
        self.busy = False
        self.incoming = 0  # KV hand-offs on their way here (a decode replica)
        self._plan: list[tuple[list[int], int]] = []
        self.pool, self._pool_wait_s = sim.kv_pool, 0.0  # pool transfers the next step waits for (s)
        self._ahead: float | None = None  # the end of a step booked without the event loop
        self.received = 0  # requests routed here
        self.chunked = self.cfg.policy == Policy.CHUNKED
        self.limited = self.cfg.policy != Policy.STATIC  # prompts within the token budget
        self.sharing = self.cfg.shared_prefix > 0 and role != Role.DECODE
        self.cached = 0  # shared-prefix tokens this replica holds
        self.prefill_tokens = 0  # prompt tokens computed (recomputation after preemption included)
        self.spec = self.cfg.speculation
        self.verify = 1 + (self.spec.k if self.spec else 0)  # tokens a decoding sequence verifies per step
        self.decode_tokens = self.decode_steps = 0  # of the sequences that finished decoding here

    @property
    def outstanding(self) -> int:
        return len(self.waiting) + self.n_running + self.incoming

    def enqueue(self, rid: int) -> None:
        self.received += 1
        self.waiting.append(rid)
        self.kick()

    def kick(self) -> None:
        """Start a step once the events of this instant are in (so simultaneous arrivals batch)."""
        if not self.busy:
            self.busy = True
            self.loop.schedule(0.0, self._begin, priority=1)

    def _begin(self) -> None:
        self._start_step()
        self._run_ahead()

    def _kv_need(self, rid: int) -> int:
        t = self.table
        if self.cfg.reserve_full:
            tokens = t.prompt[rid] if self.role == Role.PREFILL else t.prompt[rid] + t.out_left[rid]
            return paged_tokens(tokens - t.shared[rid], self.cfg.block_tokens)
        return t.prompt[rid] - t.shared[rid] + (self.role == Role.DECODE) + self.cfg.block_tokens // 2

    def _admit(self, rid: int) -> None:
        t = self.table
        tok = t.new_token(rid)
        self.running.append((rid, tok))
        self.n_running += 1
        held = self._readmit_from_pool(rid) if self.pool is not None else 0
        if held == t.prompt[rid]:  # its whole context came back from the pool: it decodes on
            self._resume_decode(rid)
            return
        self.kv_used += self._kv_need(rid)
        if self.role == Role.DECODE:
            self._join_decode(rid, self.step_no - 1)
        else:
            self.prefilling.append([rid, max(held, t.shared[rid])])

    def _join_decode(self, rid: int, step: int) -> None:
        t = self.table
        self.n_dec += 1
        self.sum_ctx += t.prompt[rid] + 1
        t.start[rid] = step
        heapq.heappush(self.heap, (self._finish_step(step, t.out_left[rid] - 1), rid, t.token[rid]))

    def _credit(self, step: int) -> int:
        """Tokens each decoding sequence has received by the end of step ``step`` (from step 0)."""
        return math.floor((step + 1) * self.spec.tokens_per_step) if self.spec else step + 1

    def _finish_step(self, start: int, tokens: int) -> int:
        """The step whose end gives a sequence that joined after step ``start`` its ``tokens``-th token."""
        if not self.spec:
            return start + tokens
        target = self._credit(start) + tokens
        step = max(start + 1, math.ceil(target / self.spec.tokens_per_step) - 1)
        while self._credit(step) < target:
            step += 1
        while step - 1 > start and self._credit(step - 1) >= target:
            step -= 1
        return step

    def _emitted(self, rid: int, step: int) -> int:
        """Tokens sequence ``rid`` has decoded by the end of step ``step`` (the prefill's first excluded)."""
        start = self.table.start[rid]
        return self._credit(step) - self._credit(start) if self.spec else step - start

    def _admit_waiting(self, budget: int) -> None:
        """Admit waiting requests while the step has prompt budget, batch slots and KV (``orca``:
        whole prompts within the budget, one at least; ``static``: up to ``max_batch``)."""
        cfg, cap, t = self.cfg, self.cfg.kv_capacity_tokens, self.table
        decode_role = self.role == Role.DECODE
        static, first = cfg.policy == Policy.STATIC, not self.prefilling
        while self.waiting and self.n_running < cfg.max_batch and (budget > 0 or decode_role or static or
                                                                    (first and not self.chunked)):
            rid = self.waiting[0]
            if self.sharing:
                t.shared[rid] = min(t.prefix[rid], self.cached)
            if self.n_running and self.kv_used + self._kv_need(rid) > cap:
                break
            need = 0 if decode_role else t.prompt[rid] - t.shared[rid]
            if not (self.chunked or static or first) and need > budget:
                break
            self.waiting.popleft()
            if self.sharing:
                t.hit[rid] = t.prefix[rid] > 0 and t.shared[rid] == t.prefix[rid]
            self._admit(rid)
            budget -= need
            first = False

    def _decode_work(self, tokens: int, pairs: int, prior: int, done_prompts: int) -> StepWork:
        """A step's work with speculative decoding: every decoding sequence verifies ``verify`` tokens
        (``verify`` queries at contexts n .. n + K: ``verify x n + K (K + 1) / 2`` pairs), reading its KV once."""
        v = self.verify
        return StepWork(tokens=self.n_dec * v + tokens, prefill_pairs=pairs,
                        decode_pairs=v * self.sum_ctx + self.n_dec * v * (v - 1) // 2,
                        logits_tokens=self.n_dec * v + done_prompts, kv_tokens_read=self.sum_ctx + prior)

    def _draft_s(self) -> float:
        """The K sequential draft passes over the decoding sequences (:class:`Speculation`)."""
        if not self.spec or not self.n_dec:
            return 0.0
        plain = StepWork(tokens=self.n_dec, decode_pairs=self.sum_ctx, logits_tokens=self.n_dec,
                         kv_tokens_read=self.sum_ctx)
        return self.spec.k * self.spec.draft_fraction * self.timer(plain)

    def _start_step(self) -> None:
        n_dec = self.n_dec
        if self.waiting or self.prefilling or self.spec:
            work = self._planned_work()
        elif n_dec:  # decode only (most steps): nothing to admit or plan
            self._plan = []
            ctx = self.sum_ctx
            if self._decode_s is not None and self.network is None:
                self.busy = True
                self._schedule_end(self._decode_s(n_dec, ctx))
                return
            work = StepWork(tokens=n_dec, prefill_pairs=0, decode_pairs=ctx, logits_tokens=n_dec, kv_tokens_read=ctx)
        else:
            work = None
        if work is None:
            self.busy = False
            return
        self.busy = True
        network = self.network
        self._schedule_end(self.timer(work) if network is None else network.step_s(self.index, work, self.loop.now_s))

    def _schedule_end(self, duration: float) -> None:
        """The step started now takes ``duration`` seconds (plus pool transfers and drafts)."""
        if self._pool_wait_s:  # KV moving to or from the shared pool holds the step back
            duration, self._pool_wait_s = duration + self._pool_wait_s, 0.0
        end_s = self.loop.now_s + (duration + self._draft_s() if self.spec else duration)
        # the step ends in :meth:`_end_step`'s loop when no other event can touch this replica
        # before then (:attr:`ServingSimulation.quiet_until_s`), else through the event loop
        if end_s < self.sim.quiet_until_s:
            self._ahead = end_s
        else:
            self.loop.schedule_at(end_s, self._end_step)

    def _planned_work(self) -> StepWork | None:
        """Admit waiting requests, plan the step's prompt chunks (``self._plan``); the step's work, or
        None when there is nothing to run."""
        prompt = self.table.prompt
        budget = self.cfg.token_budget - self.n_dec * self.verify
        if self.waiting and (self.chunked or self.cfg.policy == Policy.ORCA or not self.n_running):
            self._admit_waiting(budget - sum(prompt[e[0]] - e[1] for e in self.prefilling))
        plan: list[tuple[list[int], int]] = []
        tokens = pairs = prior = done_prompts = 0
        limited = self.limited
        for entry in self.prefilling:
            if budget <= 0 and (self.chunked or plan) and limited:
                break
            done = entry[1]
            chunk = prompt[entry[0]] - done
            if self.chunked:
                chunk = min(chunk, budget)
            elif plan and chunk > budget and limited:
                break
            plan.append((entry, chunk))
            budget -= chunk
            tokens += chunk
            prior += done
            pairs += chunk * done + chunk * (chunk + 1) // 2
            done_prompts += done + chunk == prompt[entry[0]]
        if not plan and not self.n_dec:
            return None
        self._plan = plan
        self.prefill_tokens += tokens
        if self.spec:
            return self._decode_work(tokens, pairs, prior, done_prompts)
        return StepWork(tokens=self.n_dec + tokens, prefill_pairs=pairs, decode_pairs=self.sum_ctx,
                        logits_tokens=self.n_dec + done_prompts, kv_tokens_read=self.sum_ctx + prior)

    def _end_step(self) -> None:
        """A step ended: book it and start the next. Steps that end before any other event could
        touch this replica are booked here in turn, the loop's clock set to each one's end (the
        loop sets it back to its next event's time), so the results are those of one event per step."""
        self._book_step()
        self._run_ahead()

    def _run_ahead(self) -> None:
        loop = self.loop
        while self._ahead is not None:
            loop.now_s, self._ahead = self._ahead, None
            self._book_step()

    def _book_step(self) -> None:
        t, step, now = self.table, self.step_no, self.loop.now_s
        grown = self.n_dec * (self._credit(step) - self._credit(step - 1)) if self.spec else self.n_dec
        self.sum_ctx += grown
        if not self.cfg.reserve_full:
            self.kv_used += grown
        heap = self.heap
        while heap and heap[0][0] <= step:
            _, rid, tok = heapq.heappop(heap)
            if t.token[rid] == tok:
                self._finish_decode(rid, now)
        for entry, chunk in self._plan:
            entry[1] += chunk
            if entry[1] == t.prompt[entry[0]]:
                self.prefilling.remove(entry)
                self._prefilled(entry[0], step, now)
        if not self.cfg.reserve_full:
            self._preempt_overflow(step)
        self.step_no += 1
        self._start_step()

    def _finish_decode(self, rid: int, now: float) -> None:
        t = self.table
        self.n_dec -= 1
        steps = self.step_no - t.start[rid]
        self.decode_tokens += t.out_left[rid] - 1
        self.decode_steps += steps
        # the context the running sums hold: a speculative last step may overshoot the output
        ctx = t.prompt[rid] + 1 + self._emitted(rid, self.step_no) if self.spec else t.prompt[rid] + t.out_left[rid]
        self.sum_ctx -= ctx
        self._release(rid, ctx)
        t.finish[rid] = now

    def _release(self, rid: int, ctx: int) -> None:
        t = self.table
        cfg = self.cfg
        self.kv_used -= self._kv_need(rid) if cfg.reserve_full else ctx - t.shared[rid] + cfg.block_tokens // 2
        self.n_running -= 1
        t.token[rid] = -1
        t.shared[rid] = 0

    def _prefilled(self, rid: int, step: int, now: float) -> None:
        t = self.table
        if self.sharing:
            self._cache_prefix(rid)
        if self.role == Role.PREFILL:
            self.sim.hand_off(self, rid)
            return
        if math.isnan(t.first[rid]):
            t.first[rid] = now
        if t.out_left[rid] <= 1:
            self._release(rid, t.prompt[rid])
            t.finish[rid] = now
        else:
            self.kv_used += not self.cfg.reserve_full
            self._join_decode(rid, step)

    def _cache_prefix(self, rid: int) -> None:
        """``rid`` has computed its prompt: the cache keeps its prefix beyond what it held, and
        ``rid``'s KV no longer counts those tokens (they are counted once, in the cache)."""
        t = self.table
        grow = t.prefix[rid] - self.cached
        if grow <= 0:
            return
        before = self._kv_need(rid)
        t.shared[rid] += grow
        self.kv_used += self._kv_need(rid) - before + grow
        self.cached += grow

    def release_transferred(self, rid: int) -> None:
        """The KV of a prefilled request has reached its decode replica (or is not needed): free it."""
        self._release(rid, self.table.prompt[rid])
        self.kick()

    def _preempt_overflow(self, step: int) -> None:
        t = self.table
        while self.kv_used > self.cfg.kv_capacity_tokens and self.n_running > 1:
            rid, tok = self.running.pop()
            if t.token[rid] != tok:
                continue
            kept = self._kv_held(rid, step) if self.pool is not None else 0
            if any(e[0] == rid for e in self.prefilling):
                self.prefilling = deque(e for e in self.prefilling if e[0] != rid)
                ctx = t.prompt[rid]
            else:
                generated = 1 + self._emitted(rid, step)
                ctx = t.prompt[rid] + generated
                self.n_dec -= 1
                self.sum_ctx -= ctx
                t.prompt[rid] = ctx
                t.out_left[rid] -= generated
            self._release(rid, ctx)
            t.preemptions += 1
            if kept and self._evict_to_pool(rid, kept):
                self.waiting.appendleft(rid)  # re-admitted here, its KV fetched back
            elif self.role == Role.DECODE:
                self.sim.route_prefill(rid)
            else:
                self.waiting.appendleft(rid)

    def _kv_held(self, rid: int, step: int) -> int:
        """KV tokens request ``rid`` holds now (before its preemption): the chunks of its prompt
        already prefilled, or its prompt and the tokens generated; 0 for a prompt whose KV is on
        its way to a decode replica."""
        for entry in self.prefilling:
            if entry[0] == rid:
                return entry[1]
        if self.role == Role.PREFILL:
            return 0
        return self.table.prompt[rid] + 1 + step - self.table.start[rid]

    def _evict_to_pool(self, rid: int, tokens: int) -> bool:
        """Write ``tokens`` tokens of ``rid``'s KV to the pool (the next step waits for it); False
        when the pool has no room."""
        seconds = self.pool.evict(rid, tokens, self.loop.now_s + self._pool_wait_s)  # type: ignore[union-attr]
        if seconds is None:
            return False
        self._pool_wait_s += seconds
        return True

    def _readmit_from_pool(self, rid: int) -> int:
        """KV tokens of ``rid`` fetched back from the pool (this step waits for them); 0 if none."""
        fetched = self.pool.readmit(rid, self.loop.now_s + self._pool_wait_s)  # type: ignore[union-attr]
        if fetched is None:
            return 0
        self._pool_wait_s += fetched[1]
        return fetched[0]

    def _resume_decode(self, rid: int) -> None:
        """``rid`` decodes on from its fetched context (its prompt is now prompt + generated): its
        first token this step, so it started this step (the preemption's ``generated`` counts so)."""
        t = self.table
        self.kv_used += t.prompt[rid] + self.cfg.block_tokens // 2
        self.n_dec += 1
        self.sum_ctx += t.prompt[rid]
        t.start[rid] = self.step_no
        heapq.heappush(self.heap, (self.step_no + t.out_left[rid] - 1, rid, t.token[rid]))


class ServingSimulation:
    """Replicas behind a router on one event loop."""

    def __init__(self, stream: RequestStream, config: ClusterConfig) -> None:
        self.stream, self.config = stream, config
        self.loop = EventLoop()
        self.table = _Table(stream, config.scheduler.shared_prefix)
        self.kv_pool = KvPool(config.kv_pool) if config.kv_pool is not None else None
        mixed = self._replicas(Role.MIXED, config.mixed, 0)
        self.front = mixed + self._replicas(Role.PREFILL, config.prefill, config.mixed)
        self.decoders = self._replicas(Role.DECODE, config.decode, len(self.front))
        self._next = 0
        self._turns = [0, 0]  # round-robin turns: prefill arrivals, KV hand-offs
        # mixed replicas timed on their own interact only through arrivals (routing reads and
        # changes their queues); hand-offs and a shared network make every event a possible contact
        self._independent = (config.prefill == 0 and config.decode == 0 and config.network is None
                             and config.kv_pool is None)  # replicas interact only through arrivals
        self._arrivals = stream.arrival_s.tolist()
        self.quiet_until_s = -math.inf
        """Before when no event but a replica's own steps can touch it: the next arrival for
        independent mixed replicas, else never (-inf); see :meth:`Replica._end_step`."""
        self._random = random.Random(config.seed)

    def _replicas(self, role: Role, count: int, first: int) -> list[Replica]:
        return [Replica(role, self.config, self.table, self, first + i) for i in range(count)]

    def run(self) -> ServingOutcome:
        if len(self.stream):
            self.loop.schedule_at(float(self.stream.arrival_s[0]), self._arrive)
        self.loop.run()
        t = self.table
        replicas = self.front + self.decoders
        return ServingOutcome(
            arrival_s=self.stream.arrival_s,
            first_token_s=np.array(t.first),
            finish_s=np.array(t.finish),
            output_len=self.stream.output_len,
            preemptions=t.preemptions,
            steps=sum(r.step_no for r in replicas),
            events=self.loop.events_run,
            kv_pool=self.kv_pool.report() if self.kv_pool is not None else None,
            prefix_hits=sum(t.hit),
            prefill_tokens=sum(r.prefill_tokens for r in replicas),
            decode_tokens=sum(r.decode_tokens for r in replicas),
            decode_steps=sum(r.decode_steps for r in replicas),
        )

    def _arrive(self) -> None:
        """Admit every request arriving now, then schedule the next arrival (one pending event)."""
        arrival, now, n = self.stream.arrival_s, self.loop.now_s, len(self.stream)
        i = self._next
        while i < n and arrival[i] <= now:
            self.route_prefill(i)
            i += 1
        self._next = i
        if self._independent:
            self.quiet_until_s = self._arrivals[i] if i < n else math.inf
        if i < n:
            self.loop.schedule_at(float(arrival[i]), self._arrive)

    def route_prefill(self, rid: int) -> None:
        self._choose(self.front, 0).enqueue(rid)

    def _choose(self, replicas: list[Replica], turn: int) -> Replica:
        """The replica the router sends the next request to; ``turn`` 0: arrivals, 1: hand-offs."""
        router = self.config.router
        if router is Router.LEAST_WORK:
            return _least_loaded(replicas)
        if router is Router.ROUND_ROBIN:
            self._turns[turn] += 1
            return replicas[(self._turns[turn] - 1) % len(replicas)]
        return replicas[self._random.randrange(len(replicas))]

    def hand_off(self, source: Replica, rid: int) -> None:
        """A prefill replica finished ``rid``'s prompt: ship its KV to a decode replica."""
        if self.table.out_left[rid] <= 1:
            source.release_transferred(rid)
            self.table.first[rid] = self.table.finish[rid] = self.loop.now_s
            return
        target = self._choose(self.decoders, 1)
        tokens = self.table.prompt[rid] + 1
        if self.config.network is not None:
            delay = self.config.network.transfer_s(source.index, target.index, tokens, self.loop.now_s)
        else:
            delay = self.config.transfer_s(tokens) if self.config.transfer_s else 0.0
        target.incoming += 1
        self.loop.schedule(delay, lambda: self._arrived(source, target, rid))

    def _arrived(self, source: Replica, target: Replica, rid: int) -> None:
        if math.isnan(self.table.first[rid]):  # the engines stream tokens from the decode side
            self.table.first[rid] = self.loop.now_s
        source.release_transferred(rid)
        target.incoming -= 1
        target.enqueue(rid)


def _least_loaded(replicas: list[Replica]) -> Replica:
    best = replicas[0]
    for replica in replicas[1:]:
        if replica.outstanding < best.outstanding:
            best = replica
    return best
