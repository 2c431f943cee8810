"""Megatron-Core's custom pipeline layouts, ``--pipeline-model-parallel-layout`` (layer L5).

A layout lists the pipeline's model chunks (pp x vpp of them, ``|`` between two) and what each
holds: ``E`` the input embedding, ``t`` a transformer layer, ``m`` a multi-token-prediction layer,
``L`` the output layer and loss. ``(...)*n`` and ``x*n`` repeat, commas are cosmetic; chunk ``i``
runs on pipeline rank ``i mod pp`` as its virtual stage ``i // pp``. NVIDIA's DeepSeek-V3 recipe
on H100, for example, is ``Et|(tt|)*30mL`` at pp 8 x vpp 4: rank 0 holds 7 layers and the
embedding, rank 7 six layers, the MTP layer and the loss, the others 8 layers.

Source: Megatron-Core megatron/core/transformer/pipeline_parallel_layer_layout.py @ d98e8a6
(``parse_str_to_list``, ``__init__``, ``validate_layer_layout``): the same grammar and checks
(chunk count divisible by pp, the embedding first and the loss last, once each, as many ``t`` as
the model has layers and ``m`` as MTP layers, no layer after an MTP layer). MTP layers on a rank
other than the last (Megatron's "standalone" MTP) are not modelled and are refused.
"""

from __future__ import annotations

import re
from functools import lru_cache

from fabricsim.errors import FabricsimError

LAYER_CHARS = "EtmL"
MAX_LAYOUT_CHARS = 100_000  # unrolled; far above any real model (pp x vpp chunks of a few layers each)
_REPEATS = (re.compile(r"\(([^)]+)\)\*(\d+)"), re.compile(r"(.)\*(\d+)"))  # (...)*n, then x*n


@lru_cache(maxsize=64)
def parse_layout(text: str) -> tuple[str, ...]:
    """The model chunks of a layout string, in order (each a string of :data:`LAYER_CHARS`)."""
    unrolled = text.replace(",", "").replace(" ", "")
    for pattern in _REPEATS:
        size = len(unrolled) + sum(len(m.group(1)) * int(m.group(2)) for m in pattern.finditer(unrolled))
        if size > MAX_LAYOUT_CHARS:
            problem = f"unrolls to more than {MAX_LAYOUT_CHARS:,} characters"
            raise FabricsimError("pipeline-layout", problem, "use smaller repeat counts")
        unrolled = pattern.sub(lambda match: match.group(1) * int(match.group(2)), unrolled)
    chunks = tuple(unrolled.split("|"))
    bad = sorted({char for chunk in chunks for char in chunk if char not in LAYER_CHARS})
    if not text.strip() or bad:
        problem = f"unknown characters {''.join(bad)!r} in {text!r}" if bad else "empty layout"
        raise FabricsimError("pipeline-layout", problem, "use E, t, m, L, | and (...)*n, e.g. 'Et|(tt|)*30mL'")
    return chunks


def rank_layers(chunks: tuple[str, ...], pipeline_parallel: int) -> tuple[int, ...]:
    """Transformer layers each pipeline rank holds (chunk i on rank i mod pp)."""
    pp = pipeline_parallel
    return tuple(sum(chunk.count("t") for chunk in chunks[rank::pp]) for rank in range(pp))


def check_layout_chunks(
    chunks: tuple[str, ...], layers: int, pipeline_parallel: int, virtual_stages: int, mtp_layers: int
) -> None:
    """Raise :class:`FabricsimError` unless the chunks can run the model at pp x vpp (module docstring)."""
    stages = pipeline_parallel * virtual_stages
    if len(chunks) != stages:
        problem = f"{len(chunks)} chunks, but pp x vpp = {stages}"
        raise FabricsimError("pipeline-layout", problem, "give one chunk per pipeline stage")
    check_layout_content(chunks, layers, mtp_layers)


def check_layout_content(chunks: tuple[str, ...], layers: int, mtp_layers: int) -> None:
    """Raise :class:`FabricsimError` unless the chunks hold the model's parts where Megatron-Core
    and this model allow them (module docstring); the chunk count is checked per layout."""
    flat = "".join(chunks)

    def refuse(problem: str, fix: str) -> None:
        raise FabricsimError("pipeline-layout", problem, fix)

    if flat.count("E") != 1 or flat.count("L") != 1 or not flat.startswith("E") or not flat.endswith("L"):
        refuse("the embedding E must come first and the loss L last, once each", "e.g. 'Et|(tt|)*30mL'")
    if flat.count("t") != layers:
        refuse(f"{flat.count('t')} transformer layers t, the model has {layers}", f"place {layers} t")
    if flat.count("m") != mtp_layers:
        refuse(f"{flat.count('m')} MTP layers m, but --mtp-layers is {mtp_layers}", "make them equal")
    if "m" in flat and "t" in flat[flat.index("m"):]:
        refuse("a transformer layer follows an MTP layer", "place the MTP layers after every t")
    if flat.count("m") != chunks[-1].count("m"):
        refuse("MTP layers outside the last chunk are not modelled", "put every m in the last chunk")
