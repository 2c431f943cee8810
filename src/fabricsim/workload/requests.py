"""Serving request streams: length distributions, Poisson or gamma arrivals, trace files (layer L5).

A stream is three aligned numpy arrays: arrival times (s, sorted), input and output lengths (tokens).
Lengths come from a DIST string:

* ``512`` -- every request has 512 tokens;
* ``uniform:LO,HI`` -- integers uniform in [LO, HI];
* ``lognormal:MEAN,SIGMA`` -- log-normal with the given mean (tokens) and log-space sigma, rounded
  and clipped to [1, the model's context];
* ``normal:MEAN,STD`` -- normal, rounded and clipped the same way;
* ``zipf:S,MIN,MAX`` -- integers in [MIN, MAX] with P(k) proportional to k^-S (S > 0, a bounded
  Zipf law: most requests short, a heavy tail of long ones).

Arrivals come from an ARRIVAL string: ``poisson`` (exponential gaps) or ``gamma:CV`` (gamma gaps of
mean ``1 / rate`` and coefficient of variation CV: bursty for CV > 1, smoother than Poisson for
CV < 1; ``gamma:1`` draws exactly the Poisson stream of the same seed).

Traces are CSV (with a header) or JSON Lines with, per request, an arrival time in seconds and the
input and output lengths; accepted column names: ``arrival_s|arrival_time|timestamp``,
``input_len|input_tokens|prompt_len``, ``output_len|output_tokens|completion_len``. A row that
cannot be read is a :class:`FabricsimError` naming its line.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from fabricsim.errors import FabricsimError
from fabricsim.limits import check_cap
from fabricsim.textfile import table_rows

ARRIVAL_KEYS = ("arrival_s", "arrival_time", "timestamp")
INPUT_KEYS = ("input_len", "input_tokens", "prompt_len")
OUTPUT_KEYS = ("output_len", "output_tokens", "completion_len")


@dataclass(frozen=True)
class RequestStream:
    """Aligned arrays: ``arrival_s`` (sorted, s), ``input_len`` and ``output_len`` (tokens)."""

    arrival_s: np.ndarray
    input_len: np.ndarray
    output_len: np.ndarray

    def __len__(self) -> int:
        return len(self.arrival_s)


@dataclass(frozen=True, slots=True)
class LengthDist:
    kind: str
    a: float
    b: float = 0.0
    c: float = 0.0  # zipf: a = exponent S, b = MIN, c = MAX

    @property
    def upper_bound(self) -> float:
        """Largest length the distribution can produce before clipping (inf if unbounded)."""
        if self.kind == "fixed":
            return self.a
        if self.kind == "uniform":
            return self.b
        if self.kind == "zipf":
            return self.c
        return math.inf


MAX_LOG_SIGMA = 10.0  # a log-normal sigma beyond this puts all mass at 1 token or past any context


def parse_length_dist(text: str, field: str) -> LengthDist:
    """Parse a DIST string (see module docstring): finite numbers, lengths at most the token cap,
    ``uniform`` with at least one integer in [LO, HI], a log-normal sigma at most 10."""
    raw = str(text).strip().lower()
    shown = repr(str(text)[:40])
    fix = "use an integer, uniform:LO,HI, lognormal:MEAN,SIGMA, normal:MEAN,STD or zipf:S,MIN,MAX"
    if raw.startswith("zipf:"):
        return _parse_zipf(raw, shown, field, fix)
    try:
        if ":" not in raw:
            value = int(raw)
            if value < 1:
                raise ValueError
            check_cap(field, value, "TOKENS")
            return LengthDist("fixed", value)
        kind, args = raw.split(":", 1)
        a, b = (float(v) for v in args.split(","))
    except ValueError:
        raise FabricsimError(field, f"cannot parse length distribution {shown}", fix) from None
    if not (math.isfinite(a) and math.isfinite(b)):
        raise FabricsimError(field, f"length distribution {shown} needs finite numbers", fix)
    check_cap(field, max(a, b if kind != "lognormal" else 0.0), "TOKENS")
    if kind == "uniform" and a >= 1 and math.ceil(a) <= math.floor(b):
        return LengthDist(kind, math.ceil(a), math.floor(b))
    if kind == "lognormal" and a >= 1 and 0 <= b <= MAX_LOG_SIGMA:
        return LengthDist(kind, a, b)
    if kind == "normal" and a >= 1 and b >= 0:
        return LengthDist(kind, a, b)
    rules = "; uniform: 1 <= LO <= HI, lognormal: SIGMA <= 10"
    raise FabricsimError(field, f"bad length distribution {shown}", fix + rules)


MAX_ZIPF_EXPONENT = 10.0  # beyond this, 2^-S < 0.1%: all mass on MIN, the law says nothing more


def _parse_zipf(raw: str, shown: str, field: str, fix: str) -> LengthDist:
    """``zipf:S,MIN,MAX``: 0 < S <= 10, 1 <= MIN <= MAX integers, MAX at most the token cap."""
    try:
        s, low, high = (float(v) for v in raw.split(":", 1)[1].split(","))
    except ValueError:
        raise FabricsimError(field, f"cannot parse length distribution {shown}", fix) from None
    if not all(math.isfinite(v) for v in (s, low, high)):
        raise FabricsimError(field, f"length distribution {shown} needs finite numbers", fix)
    check_cap(field, max(low, high), "TOKENS")
    if 0 < s <= MAX_ZIPF_EXPONENT and low >= 1 and math.ceil(low) <= math.floor(high):
        return LengthDist("zipf", s, math.ceil(low), math.floor(high))
    raise FabricsimError(field, f"bad length distribution {shown}",
                         fix + "; zipf: 0 < S <= 10 and integers 1 <= MIN <= MAX")


def zipf_lengths(dist: LengthDist, rng: np.random.Generator, count: int) -> np.ndarray:
    """``count`` integers in [MIN, MAX] with P(k) = k^-S / sum_j j^-S, by inverting the CDF."""
    support = np.arange(int(dist.b), int(dist.c) + 1, dtype=np.float64)
    cdf = np.cumsum(support ** -dist.a)
    picks = np.searchsorted(cdf, rng.random(count) * cdf[-1], side="right")
    return support[np.minimum(picks, len(support) - 1)]


def sample_lengths(dist: LengthDist, rng: np.random.Generator, count: int, limit: int) -> np.ndarray:
    """``count`` lengths (int64) drawn from ``dist``, clipped to [1, ``limit``]."""
    if dist.kind == "fixed":
        values = np.full(count, dist.a)
    elif dist.kind == "uniform":
        values = rng.integers(int(dist.a), int(dist.b) + 1, size=count)
    elif dist.kind == "zipf":
        values = zipf_lengths(dist, rng, count)
    elif dist.kind == "lognormal":
        mu = math.log(dist.a) - dist.b**2 / 2.0
        values = np.rint(rng.lognormal(mu, dist.b, size=count))
    else:
        values = np.rint(rng.normal(dist.a, dist.b, size=count))
    return np.clip(values, 1, limit).astype(np.int64)


TIME_RESOLUTION_S = 1e-6  # the finest time a serving run must resolve: a kernel launch (~µs)
MAX_ARRIVAL_S = TIME_RESOLUTION_S * 2**52
"""Latest arrival a serving run accepts, ~4.5e9 s (~143 years): times are float64 seconds, whose
52 fraction bits resolve 1 µs only up to 2^52 µs; later, step times and latencies round away
(``--arrival-rate 1e-300`` gave e2e p50 0.0 s and 6.6e300 J per token)."""


def check_arrival_rate(rate_per_s: float, count: int, field: str = "arrival-rate") -> None:
    """Refuse a Poisson rate whose ``count`` arrivals would span past :data:`MAX_ARRIVAL_S`."""
    if math.isinf(rate_per_s) or count <= rate_per_s * MAX_ARRIVAL_S:
        return
    lowest = count / MAX_ARRIVAL_S
    problem = (f"{rate_per_s:g} requests/s spreads {count} requests past the {MAX_ARRIVAL_S:.3g} s "
               "(~143 years) that float64 seconds resolve to 1 µs")
    raise FabricsimError(field, problem, f"give at least {lowest:.3g}")


@dataclass(frozen=True, slots=True)
class ArrivalProcess:
    """Inter-arrival gaps: ``poisson`` (exponential) or ``gamma`` with coefficient of variation ``cv``."""

    kind: str = "poisson"
    cv: float = 1.0

    def __str__(self) -> str:
        """The ARRIVAL string that gives this process (``poisson`` or ``gamma:CV``)."""
        return self.kind if self.kind == "poisson" else f"gamma:{self.cv:g}"


POISSON = ArrivalProcess()
MAX_ARRIVAL_CV = 10.0
"""Largest gamma CV accepted: at CV 10 the gamma shape is 0.01, and about 87% of gaps are already
below 1e-6 of the mean gap (P(X < x) ~ (x / scale)^shape for small x), i.e. below the 1 µs a serving
run resolves at any usual rate; larger CVs only make those zero gaps more common."""


def parse_arrival(text: str, field: str = "arrival") -> ArrivalProcess:
    """``poisson`` or ``gamma:CV`` with 0 < CV <= :data:`MAX_ARRIVAL_CV`."""
    raw = str(text).strip().lower()
    fix = f"use poisson or gamma:CV with 0 < CV <= {MAX_ARRIVAL_CV:g} (CV > 1: bursts; gamma:1 is Poisson)"
    if raw == "poisson":
        return POISSON
    kind, _, arg = raw.partition(":")
    try:
        cv = float(arg)
    except ValueError:
        cv = math.nan
    if kind != "gamma" or not 0 < cv <= MAX_ARRIVAL_CV:  # NaN fails the comparison too
        raise FabricsimError(field, f"bad arrival process {str(text)[:40]!r}", fix)
    return ArrivalProcess("gamma", cv)


def arrival_gaps(process: ArrivalProcess, rate_per_s: float, rng: np.random.Generator, count: int) -> np.ndarray:
    """``count`` inter-arrival gaps (s) of mean ``1 / rate_per_s``. Gamma: shape k = 1/CV^2 and scale
    1/(rate k), so mean k·scale = 1/rate and CV = 1/sqrt(k); numpy draws shape 1 as an exponential,
    so ``gamma:1`` gives the Poisson gaps of the same seed."""
    if process.kind == "poisson":
        return rng.exponential(1.0 / rate_per_s, size=count)
    shape = 1.0 / process.cv**2
    return rng.gamma(shape, 1.0 / (rate_per_s * shape), size=count)


def poisson_stream(rate_per_s: float, count: int, lengths: tuple[LengthDist, LengthDist],
                   limits: tuple[int, int], seed: int, arrival: ArrivalProcess = POISSON) -> RequestStream:
    """``count`` requests whose inter-arrival gaps have mean ``1 / rate_per_s`` (exponential: Poisson,
    or gamma: see :func:`arrival_gaps`), first arrival at the first gap; ``rate_per_s = inf`` puts
    every arrival at t = 0 (offline)."""
    rng = np.random.default_rng(seed)
    arrivals = np.zeros(count) if math.isinf(rate_per_s) else np.cumsum(arrival_gaps(arrival, rate_per_s, rng, count))
    return RequestStream(
        arrival_s=arrivals,
        input_len=sample_lengths(lengths[0], rng, count, limits[0]),
        output_len=sample_lengths(lengths[1], rng, count, limits[1]),
    )


def clip_to_context(stream: RequestStream, context: int) -> RequestStream:
    """Cut output lengths so that input + output never exceeds ``context`` tokens (sampled lengths of
    unbounded distributions are clipped, as a server truncates generation at the context)."""
    output = np.minimum(stream.output_len, np.maximum(context - stream.input_len, 1))
    return RequestStream(stream.arrival_s, stream.input_len, output)


TRACE = "request-trace"  # the option that names the file, in every trace error


def _pick(row: dict[str, object], keys: tuple[str, ...], line: int) -> object:
    for key in keys:
        if key in row and row[key] not in (None, ""):
            return row[key]
    raise FabricsimError(TRACE, f"line {line}: missing {keys[0]} (or {', '.join(keys[1:])})",
                         "each row needs arrival time, input and output lengths")


def _row_values(row: object, line: int) -> tuple[float, int, int]:
    if not isinstance(row, dict):
        raise FabricsimError(TRACE, f"line {line}: not a record", "write one JSON object per line")
    try:
        arrival = float(_pick(row, ARRIVAL_KEYS, line))  # type: ignore[arg-type]
        inp = float(_pick(row, INPUT_KEYS, line))  # type: ignore[arg-type]
        out = float(_pick(row, OUTPUT_KEYS, line))  # type: ignore[arg-type]
    except (TypeError, ValueError, OverflowError):
        raise FabricsimError(TRACE, f"line {line}: unreadable values {str(row)[:60]}", "use numbers") from None
    if not all(math.isfinite(v) for v in (arrival, inp, out)) or arrival < 0 or inp < 1 or out < 1:
        problem = f"line {line}: arrival must be a finite time >= 0 and lengths >= 1"
        raise FabricsimError(TRACE, problem, "fix that row")
    if arrival > MAX_ARRIVAL_S:
        problem = f"line {line}: arrival {arrival:.3g} s is past {MAX_ARRIVAL_S:.3g} s (float64 seconds resolve 1 µs)"
        raise FabricsimError(TRACE, problem, "fix that row")
    check_cap(f"{TRACE} line {line}", max(inp, out), "TOKENS")
    return arrival, int(inp), int(out)


def parse_trace(text: str, jsonl: bool) -> RequestStream:
    """A request stream from trace text (CSV with header, or JSON Lines), sorted by arrival. A
    leading UTF-8 byte-order mark (spreadsheets write one) is dropped, as Python's utf-8-sig does."""
    hints = ("one JSON object per line", "use numbers", "a header, then one row per request")
    rows = table_rows(text, jsonl, TRACE, hints)
    check_cap(f"{TRACE} rows", len(rows), "REQUESTS")
    values = [_row_values(row, line) for line, row in rows]
    if not values:
        raise FabricsimError(TRACE, "no requests in the trace", "add rows")
    array = np.array(values, dtype=float)
    order = np.argsort(array[:, 0], kind="stable")
    array = array[order]
    return RequestStream(array[:, 0].copy(), array[:, 1].astype(np.int64), array[:, 2].astype(np.int64))
