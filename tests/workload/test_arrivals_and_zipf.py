"""Arrival processes beyond Poisson (`--arrival gamma:CV`) and Zipf lengths (`zipf:S,MIN,MAX`), issue 24 item 4."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy import stats

from fabricsim.errors import FabricsimError
from fabricsim.workload.requests import (
    POISSON,
    ArrivalProcess,
    LengthDist,
    parse_arrival,
    parse_length_dist,
    poisson_stream,
    sample_lengths,
)

SAMPLES = 100_000
FIXED = (LengthDist("fixed", 10), LengthDist("fixed", 10))


def _gaps(arrival: ArrivalProcess, rate: float, seed: int = 3) -> np.ndarray:
    stream = poisson_stream(rate, SAMPLES, FIXED, (100, 100), seed, arrival)
    return np.diff(stream.arrival_s, prepend=0.0)


@pytest.mark.parametrize("cv", [0.5, 2.0, 4.0])
def test_gamma_gaps_have_the_asked_mean_rate_and_cv(cv):
    """Over 100k gaps: mean rate within 2%, coefficient of variation within 5% (the sample CV of a
    gamma with CV 4 has a standard error of ~1.7% at this size)."""
    rate = 30.0
    gaps = _gaps(parse_arrival(f"gamma:{cv}"), rate)
    assert 1.0 / gaps.mean() == pytest.approx(rate, rel=0.02)
    assert gaps.std() / gaps.mean() == pytest.approx(cv, rel=0.05)


def test_bursty_arrivals_are_burstier_than_poisson():
    poisson, bursty = _gaps(POISSON, 10.0), _gaps(parse_arrival("gamma:3"), 10.0)
    assert np.std(bursty) > 2.5 * np.std(poisson)


def test_gamma_cv_1_is_poisson_in_distribution_and_draw_for_draw():
    """CV 1 is the exponential: a two-sample KS test against Poisson gaps of another seed does not reject,
    while CV 2 does; and with the same seed the stream is the Poisson stream exactly."""
    gamma1 = _gaps(parse_arrival("gamma:1"), 7.0, seed=1)
    assert stats.ks_2samp(gamma1, _gaps(POISSON, 7.0, seed=2)).pvalue > 0.01
    assert stats.ks_2samp(_gaps(parse_arrival("gamma:2"), 7.0, seed=1), _gaps(POISSON, 7.0, seed=2)).pvalue < 1e-6
    same_seed = poisson_stream(7.0, 1000, FIXED, (100, 100), 5, parse_arrival("gamma:1"))
    np.testing.assert_array_equal(same_seed.arrival_s, poisson_stream(7.0, 1000, FIXED, (100, 100), 5).arrival_s)


def test_gamma_arrivals_are_seeded():
    a = poisson_stream(5.0, 100, FIXED, (100, 100), 9, parse_arrival("gamma:2")).arrival_s
    b = poisson_stream(5.0, 100, FIXED, (100, 100), 9, parse_arrival("gamma:2")).arrival_s
    np.testing.assert_array_equal(a, b)
    assert np.all(np.diff(a) >= 0)


def test_zipf_lengths_stay_in_bounds_and_follow_the_exponent():
    """zipf:1.5,1,1000 over 100k draws: every length in [1, 1000]; P(1)/P(2) = 2^1.5 and P(1)/P(4) = 4^1.5
    within sampling error; the fitted log-log slope of the frequencies of 1..8 is -1.5."""
    dist = parse_length_dist("zipf:1.5,1,1000", "input-len")
    values = sample_lengths(dist, np.random.default_rng(0), SAMPLES, 10_000)
    assert values.min() >= 1 and values.max() <= 1000
    counts = np.bincount(values, minlength=9)[1:9].astype(float)
    assert counts[0] / counts[1] == pytest.approx(2**1.5, rel=0.05)
    assert counts[0] / counts[3] == pytest.approx(4**1.5, rel=0.08)
    slope = np.polyfit(np.log(np.arange(1, 9)), np.log(counts), 1)[0]
    assert slope == pytest.approx(-1.5, abs=0.05)


def test_zipf_with_a_minimum_starts_there_and_the_mean_matches_the_law():
    dist = parse_length_dist("zipf:1.1,100,4000", "output-len")
    values = sample_lengths(dist, np.random.default_rng(1), SAMPLES, 10_000)
    assert values.min() == 100 and values.max() <= 4000
    support = np.arange(100, 4001, dtype=float)
    weights = support**-1.1
    assert values.mean() == pytest.approx(float((support * weights).sum() / weights.sum()), rel=0.02)
    assert dist.upper_bound == 4000


@pytest.mark.parametrize("text", ["gamma", "gamma:", "gamma:0", "gamma:-1", "gamma:nan", "gamma:inf", "gamma:11",
                                  "poisson:2", "weibull:2", ""])
def test_bad_arrival_specs_name_the_option_and_the_fix(text):
    with pytest.raises(FabricsimError, match=r"arrival.*poisson or gamma:CV"):
        parse_arrival(text)


@pytest.mark.parametrize("text", ["zipf:0,1,5", "zipf:-1,1,5", "zipf:11,1,5", "zipf:1,0,5", "zipf:1,9,3",
                                  "zipf:1,5", "zipf:nan,1,5", "zipf:1,1,inf", "zipf:1,1.5,1.9"])
def test_bad_zipf_specs_name_the_option(text):
    with pytest.raises(FabricsimError, match="input-len"):
        parse_length_dist(text, "input-len")


def test_the_cli_takes_gamma_arrivals_and_zipf_lengths_and_refuses_bad_ones(capsys):
    from fabricsim.cli.app import main

    base = ["serve", "--model", "llama3-8b", "--system", "dgx-h100", "--gpus", "1", "--arrival-rate", "5",
            "--requests", "50", "--output-len", "8", "--json"]
    assert main([*base, "--arrival", "gamma:2", "--input-len", "zipf:1.2,16,512"]) == 0
    assert '"completed": 50' in capsys.readouterr().out
    assert main([*base, "--arrival", "gamma:0"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "arrival" in err and "Traceback" not in err


def test_a_request_trace_with_gamma_arrivals_is_refused(tmp_path, capsys):
    from fabricsim.cli.app import main

    trace = tmp_path / "rq.csv"
    trace.write_text("arrival_s,input_len,output_len\n0,10,5\n", encoding="utf-8")
    argv = ["serve", "--model", "llama3-8b", "--system", "dgx-h100", "--gpus", "1", "--request-trace", str(trace),
            "--arrival", "gamma:2", "--json"]
    assert main(argv) == 2
    assert "arrival" in capsys.readouterr().err


def test_the_serve_json_names_its_arrival_process(capsys):
    from fabricsim.cli.app import main

    base = ["serve", "--model", "llama3-8b", "--system", "dgx-h100", "--gpus", "1", "--arrival-rate", "5",
            "--requests", "20", "--output-len", "8", "--input-len", "64", "--json"]
    assert main([*base, "--arrival", "GAMMA:2.50"]) == 0
    assert json.loads(capsys.readouterr().out)["arrival"] == "gamma:2.5"
    assert main(base) == 0
    assert json.loads(capsys.readouterr().out)["arrival"] == "poisson"
