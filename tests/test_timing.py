import pytest

from harness import timing


def test_repeats_samples_and_result(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []
    monkeypatch.setattr(timing, "MIN_TIME_S", 0.0)
    m, result = timing.measure(lambda: calls.append(1) or len(calls), warmup=2, repeats=3, backend="numpy")
    assert len(calls) == 5 and result == 5
    assert len(m.samples_s) == 3 and m.warmup == 2
    assert m.median_s == sorted(m.samples_s)[1] and m.iqr_s >= 0
    assert m.threads  # thread pools are recorded


def test_fast_calls_repeat_until_min_time() -> None:
    m, _ = timing.measure(lambda: None, warmup=0, repeats=1, backend="numpy")
    assert len(m.samples_s) == timing.MAX_REPEATS


def test_cuda_is_synchronised_around_each_sample(monkeypatch: pytest.MonkeyPatch) -> None:
    events: list[str] = []
    monkeypatch.setattr(timing, "synchronize", lambda backend: events.append(f"sync:{backend}"))
    monkeypatch.setattr(timing, "MIN_TIME_S", 0.0)
    timing.measure(lambda: events.append("call"), warmup=1, repeats=2, backend="cuda")
    assert events == ["call", "sync:cuda", "call", "sync:cuda", "call", "sync:cuda"]
