"""Decode steps of one inference replica as an op graph (layer L5).

The batch is split into ``pipeline_parallel`` micro-batches that chase each other through the
stages (the pipeline stays full, as the analytic step model assumes: a step is ``pp`` stage
times). Micro-batch ``j``'s step ``k`` on stage ``s`` runs after its step ``k`` on stage ``s - 1``
and, on stage 0, after its step ``k - 1`` left the last stage (the next token needs the previous
one). Each (step, micro-batch, stage) is a compute op followed by the stage's blocking tensor/expert
collectives and the hand-off to the next stage. One rank class per stage; its ``members`` GPUs
(tensor x expert parallel) are in lock-step in every layer (``layers`` sync points).
"""

from __future__ import annotations

from dataclasses import dataclass

from fabricsim.workload.graph import Op, OpGraph, RankClass, Stream


@dataclass(frozen=True, slots=True)
class DecodePlan:
    """Per micro-batch and stage: compute, blocking collectives and p2p hand-off (s)."""

    pipeline_parallel: int
    steps: int
    compute_s: float
    collectives_s: float = 0.0
    p2p_s: float = 0.0
    stage_gpus: int = 1
    layers: int = 1


def build_decode_graph(plan: DecodePlan) -> tuple[OpGraph, list[list[int]]]:
    """The graph and, per micro-batch, the op ending each of its decode steps (index [j][k])."""
    p = plan.pipeline_parallel
    graph = OpGraph(folded={"decode_stages_simulated": p, "members_in_lock_step": plan.stage_gpus})
    graph.notes = [f"{plan.steps} decode steps, {p} micro-batches in flight"]
    ranks = [graph.add_rank(RankClass(f"stage{s}", plan.stage_gpus)) for s in range(p)]
    token_done: list[list[int]] = [[] for _ in range(p)]
    for k in range(plan.steps):
        for j in range(p):
            prev = token_done[j][k - 1] if k else None
            for s in range(p):
                deps = () if prev is None else (prev,)
                name = f"step{k}.mb{j}"
                last = graph.add(
                    Op(name, ranks[s], Stream.COMPUTE, "decode", plan.compute_s, deps=deps, sync_points=plan.layers)
                )
                if plan.collectives_s:
                    last = graph.add(
                        Op(
                            f"collectives {name}",
                            ranks[s],
                            Stream.TP_COMM,
                            "tp-ep-collectives",
                            plan.collectives_s,
                            deps=(last,),
                        )
                    )
                if plan.p2p_s:  # to the next stage, or the sampled token back to stage 0
                    last = graph.add(
                        Op(f"send {name}", ranks[s], Stream.PP_SEND, "pp-send-recv", plan.p2p_s, deps=(last,))
                    )
                prev = last
            token_done[j].append(prev)
    return graph, token_done
