"""measure(): a block's warm-ups and timed calls, repeats within an allowance, device
synchronisation, the threads recorded."""

import pytest

from harness.bench import measure as measuring


def test_repeats_samples_and_result() -> None:
    calls = []
    b, result = measuring.measure(lambda: calls.append(1) or len(calls), warmup=2, repeats=3,
                                  backend="numpy", min_time_s=0.0)
    assert len(calls) == 5 and result == 5
    assert len(b.calls_s) == 3 and b.warmups == 2 and b.warm_s >= 0
    assert b.seconds == pytest.approx(sum(b.calls_s) / 3)
    assert b.threads  # thread pools are recorded


def test_fast_calls_repeat_until_min_time() -> None:
    b, _ = measuring.measure(lambda: None, warmup=0, repeats=1, backend="numpy")
    assert len(b.calls_s) == measuring.MAX_REPEATS


def test_allowance_stops_repeats_after_one_call(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each call 'takes' 1 s on a fake clock: with 1.5 s allowed, one call is made of the 5
    asked for, since a second would end past the allowance."""
    clock = iter(range(0, 1000))
    monkeypatch.setattr(measuring.time, "perf_counter", lambda: float(next(clock)))
    b, _ = measuring.measure(lambda: None, warmup=0, repeats=5, backend="numpy", allowance_s=1.5)
    assert len(b.calls_s) == 1


def test_calls_are_announced() -> None:
    heard: list[str] = []
    measuring.measure(lambda: None, warmup=1, repeats=2, backend="numpy", min_time_s=0.0, on_call=heard.append)
    assert heard == ["warm-up 1 of 1", "call 1 of 2", "call 2 of 2"]


def test_cuda_is_synchronised_around_each_sample(monkeypatch: pytest.MonkeyPatch) -> None:
    events: list[str] = []
    monkeypatch.setattr(measuring, "synchronize", lambda backend: events.append(f"sync:{backend}"))
    measuring.measure(lambda: events.append("call"), warmup=1, repeats=2, backend="cuda", min_time_s=0.0)
    assert events == ["call", "sync:cuda", "call", "sync:cuda", "call", "sync:cuda"]


def test_min_samples_are_taken_even_past_the_allowance(monkeypatch: pytest.MonkeyPatch) -> None:
    """Calls of 1 ms on a fake clock, nothing allowed: still `min_samples` samples."""
    clock = iter(i * 0.001 for i in range(1000))
    monkeypatch.setattr(measuring.time, "perf_counter", lambda: next(clock))
    b, _ = measuring.measure(lambda: None, warmup=0, repeats=1, backend="numpy", allowance_s=0.0, min_samples=5)
    assert len(b.calls_s) == 5
