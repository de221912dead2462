import numpy as np

from harness.data.pages import small_pages
from harness.data.synthetic import SyntheticData, SyntheticSource, dense_spectrum
from harness.data.workload import Workload


def test_ids_are_readable_and_groups_follow_shapes(lora_workload: Workload) -> None:
    assert lora_workload.refs[0].id == "adapter0/layer0/up"
    assert len({r.id for r in lora_workload.refs}) == len(lora_workload) == 12
    groups = lora_workload.groups()
    assert [(g.shape, g.rank, len(g)) for g in groups] == [((40, 24), 4, 6), ((24, 40), 4, 6)]


def test_any_subset_loads_the_same_numbers(lora_workload: Workload) -> None:
    src = lora_workload.source
    refs = lora_workload.groups()[0].refs
    whole = src.load_dense(refs, np.dtype(np.float64))
    alone = src.load_dense(refs[3:4], np.dtype(np.float64))
    np.testing.assert_array_equal(whole[3], alone[0])


def test_deterministic_from_seed_and_seed_matters() -> None:
    config = SyntheticData(adapters=1, layers=1, modules={"w": (8, 6)}, rank=2)
    a, b, c = (SyntheticSource(config, seed) for seed in (1, 1, 2))
    refs = a.refs()
    dt = np.dtype(np.float32)
    np.testing.assert_array_equal(a.load_dense(refs, dt), b.load_dense(refs, dt))
    assert not np.array_equal(a.load_dense(refs, dt), c.load_dense(refs, dt))
    assert a.fingerprint() == b.fingerprint() != c.fingerprint()


def test_float32_and_float64_see_the_same_matrices(lora_workload: Workload) -> None:
    refs = lora_workload.refs[:2]
    f32 = lora_workload.source.load_factors(refs, np.dtype(np.float32))
    f64 = lora_workload.source.load_factors(refs, np.dtype(np.float64))
    np.testing.assert_array_equal(f32.B.astype(np.float64), f64.B)


def test_lora_delta_has_the_factor_rank(lora_workload: Workload) -> None:
    W = lora_workload.source.load_dense(lora_workload.refs[:1], np.dtype(np.float64))[0]
    assert np.linalg.matrix_rank(W) == 4


def test_dense_form_has_the_controlled_spectrum(dense_workload: Workload) -> None:
    W = dense_workload.source.load_dense(dense_workload.refs[:1], np.dtype(np.float64))[0]
    s = np.linalg.svd(W, compute_uv=False)
    np.testing.assert_allclose(s, dense_spectrum(20, 1e3), rtol=1e-6)
    assert not dense_workload.has_factors


def test_scale_follows_rslora() -> None:
    assert SyntheticData(rank=16, alpha=32).scale == 2.0
    assert SyntheticData(rank=16, alpha=32, rslora=True).scale == 8.0


def test_drawn_factors_are_ordinary_arrays_in_small_pages(lora_workload: Workload) -> None:
    """Placed in their own mapping (no huge-page stalls), they still write, pickle to a worker
    and outlive the load that made them; an empty draw is an empty array."""
    import pickle

    f = lora_workload.source.load_factors(lora_workload.refs[:3], np.dtype(np.float32))
    B = f.B
    del f
    B[0, 0, 0] = 1.5
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(B)), B)
    assert small_pages((0, 4, 2)).shape == (0, 4, 2)
    assert small_pages((2, 3)).flags.writeable and small_pages((2, 3)).dtype == np.float32
