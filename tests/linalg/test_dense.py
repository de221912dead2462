"""Batched dense kernels against float64 LAPACK on matrices with known spectra."""

import numpy as np
import pytest

from harness.linalg import dense
from harness.linalg.device import torch_module
from tests.conftest import known_spectrum

NEEDS_TORCH = pytest.mark.skipif(torch_module() is None, reason="torch is not installed")
BACKENDS = ["numpy", pytest.param("cpu", marks=NEEDS_TORCH)]


def stack(shape: tuple[int, int], spectra: list[np.ndarray]) -> np.ndarray:
    return np.stack([known_spectrum(*shape, s, seed=i) for i, s in enumerate(spectra)])


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("shape", [(30, 20), (20, 30)])
@pytest.mark.parametrize("condition", [1.0, 1e6])
def test_svdvals_and_svd(backend: str, shape: tuple[int, int], condition: float) -> None:
    p = min(shape)
    spectra = [np.logspace(0, -np.log10(condition), p) * (i + 1) for i in range(3)]
    X = stack(shape, spectra)
    S = dense.svdvals(X, backend=backend)
    np.testing.assert_allclose(S, np.stack(spectra), rtol=0, atol=1e-12 * 3)
    S2, U, Vh = dense.svd(X, backend=backend)
    np.testing.assert_allclose(U * S2[:, None, :] @ Vh, X, atol=1e-12)
    S3, U3, Vh3 = dense.svd(X, k=2, backend=backend)
    assert U3.shape == (3, shape[0], 2) and Vh3.shape == (3, 2, shape[1])
    np.testing.assert_allclose(S3, S2[:, :2])


def test_svd_lowrank_is_exact_on_low_rank_matrices() -> None:
    pytest.importorskip("torch")
    s = np.array([5.0, 3.0, 2.0, 1.0])
    X = stack((60, 40), [s, s * 2])
    S, U, Vh = dense.svd_lowrank(X, 2, oversample=2, niter=2, seed=0)
    np.testing.assert_allclose(S, np.stack([s[:2], 2 * s[:2]]), rtol=1e-10)
    again = dense.svd_lowrank(X, 2, oversample=2, niter=2, seed=0)
    np.testing.assert_array_equal(again[1], U)  # seeded: reproducible


def test_svd_lowrank_needs_torch() -> None:
    with pytest.raises(RuntimeError, match="needs torch"):
        dense.svd_lowrank(np.zeros((1, 4, 4)), 1, backend="numpy")


ORIENTATIONS = [(5, 7, 19), (5, 19, 7), (5, 11, 11)]  # wide (run transposed), tall, square


def needs(backend: str) -> None:
    if backend == "cpu":
        pytest.importorskip("torch")


@pytest.mark.parametrize("backend", ["numpy", "cpu"])
@pytest.mark.parametrize("shape", ORIENTATIONS)
def test_svdvals_on_either_orientation_matches_lapack(
    backend: str, shape: tuple[int, int, int]
) -> None:
    needs(backend)
    X = np.random.default_rng(1).standard_normal(shape)
    ref = np.linalg.svd(X, compute_uv=False)
    S = dense.svdvals(X, backend=backend)
    assert S.shape == (shape[0], min(shape[1:]))
    np.testing.assert_allclose(S, ref, rtol=1e-12, atol=1e-12 * ref.max())


@pytest.mark.parametrize("backend", ["numpy", "cpu"])
@pytest.mark.parametrize("shape", ORIENTATIONS)
def test_svd_on_either_orientation_keeps_shapes_and_reconstructs(
    backend: str, shape: tuple[int, int, int]
) -> None:
    needs(backend)
    b, m, n = shape
    q = min(m, n)
    X = np.random.default_rng(2).standard_normal(shape)
    S, U, Vh = dense.svd(X, backend=backend)
    assert U is not None and Vh is not None
    assert S.shape == (b, q) and U.shape == (b, m, q) and Vh.shape == (b, q, n)
    eye = np.broadcast_to(np.eye(q), (b, q, q))
    np.testing.assert_allclose(U.mT @ U, eye, atol=1e-12)  # orthonormal columns
    np.testing.assert_allclose(Vh @ Vh.mT, eye, atol=1e-12)  # orthonormal rows
    np.testing.assert_allclose(U * S[:, None, :] @ Vh, X, atol=1e-12)

    Uref, Sref, Vhref = np.linalg.svd(X, full_matrices=False)
    S3, U3, Vh3 = dense.svd(X, k=3, backend=backend)
    assert U3 is not None and Vh3 is not None
    assert S3.shape == (b, 3) and U3.shape == (b, m, 3) and Vh3.shape == (b, 3, n)
    np.testing.assert_allclose(S3, Sref[:, :3], rtol=1e-12)
    signs = np.sign(np.einsum("bmk,bmk->bk", U3, Uref[..., :3]))  # each triplet up to its sign
    np.testing.assert_allclose(U3 * signs[:, None, :], Uref[..., :3], atol=1e-12)
    np.testing.assert_allclose(Vh3 * signs[:, :, None], Vhref[:, :3, :], atol=1e-12)


@pytest.mark.parametrize(("backend", "driver"), [("cuda", "gesvd"), ("cpu", None)])
@pytest.mark.parametrize("shape", [(4, 9), (9, 4)])
def test_cuda_asks_for_the_qr_driver_and_cpu_for_none(
    monkeypatch: pytest.MonkeyPatch, backend: str, driver: str | None, shape: tuple[int, int]
) -> None:
    torch = pytest.importorskip("torch")
    seen: list[dict[str, object]] = []

    def spy(real):  # type: ignore[no-untyped-def]
        def call(A, *args, **kwargs):  # type: ignore[no-untyped-def]
            seen.append(dict(kwargs))
            kwargs.pop("driver", None)  # the real call runs on a CPU tensor, which takes no driver
            return real(A, *args, **kwargs)

        return call

    # fake CUDA: the "cuda" backend gets a CPU tensor, and the torch calls record their keywords
    monkeypatch.setattr(
        dense, "as_backend", lambda x, backend: torch.from_numpy(np.ascontiguousarray(x))
    )
    monkeypatch.setattr(torch.linalg, "svdvals", spy(torch.linalg.svdvals))
    monkeypatch.setattr(torch.linalg, "svd", spy(torch.linalg.svd))
    X = np.random.default_rng(3).standard_normal((2, *shape))
    S = dense.svdvals(X, backend=backend)
    S2, U, Vh = dense.svd(X, backend=backend)
    assert len(seen) == 2
    for kwargs in seen:
        assert kwargs.get("driver") == driver and ("driver" in kwargs) == (driver is not None)
    np.testing.assert_allclose(S, np.linalg.svd(X, compute_uv=False), rtol=1e-12)
    np.testing.assert_allclose(U * S2[:, None, :] @ Vh, X, atol=1e-12)
