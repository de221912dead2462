"""Dual PCA: principal components of n very long vectors from their n x n Gram matrix.

For n samples of dimension d >> n (fine-tuned adapters flattened to vectors), the d x d
covariance is out of reach, but the centred data ``Xc = H X`` (``H = I - 1 1^T / n``) has the
same nonzero spectrum as its Gram matrix ``Gc = Xc @ Xc.T = H G H``. If ``Gc = V diag(w) V^T``
then ``Xc = V diag(sqrt(w)) A`` is the thin SVD of Xc, with principal axes (rows of A)
``A_k = Xc^T v_k / sqrt(w_k)`` and scores ``Xc @ A_k^T = v_k sqrt(w_k)``. This is the "dual" or
"snapshot" method (Sirovich 1987; the Gram-matrix form of kernel PCA with a linear kernel,
Schoelkopf, Smola & Mueller 1998). Conventions follow scikit-learn's ``PCA``:
``explained_variance = w / (n - 1)``, ratios relative to the total variance ``trace(Gc)/(n-1)``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

import numpy as np

from harness.linalg.device import Backend, as_backend, to_numpy, torch_missing_reason, torch_module
from harness.linalg.gram import center_gram
from harness.linalg.gram_torch import _float64_tensor

__all__ = ["DualPCA", "dual_pca", "principal_axes"]


@dataclass(frozen=True, eq=False)
class DualPCA:
    """The leading components of a dual PCA. Arrays are float64 and read-only.

    Attributes
    ----------
    eigenvalues : ndarray of shape (components,)
        Variance along each principal axis, descending: eigenvalue of the (centred) Gram matrix
        divided by ``n - 1`` (scikit-learn's ``explained_variance_``; divided by 1 when n = 1).
    explained_variance_ratio : ndarray of shape (components,)
        ``eigenvalues / total variance`` with total variance ``trace(Gc) / (n - 1)``, so the
        ratios of fewer components than the rank sum to less than 1; all 0 when there is no
        variance.
    singular_values : ndarray of shape (components,)
        Singular values of the (centred) data matrix, ``sqrt`` of the Gram eigenvalues
        (scikit-learn's ``singular_values_``).
    scores : ndarray of shape (n, components)
        Coordinates of each sample on each axis, ``Xc @ axis_k`` (scikit-learn's
        ``fit_transform``). Sign: each column's largest-magnitude entry is positive (the first
        such entry, within a relative 1e-9, on ties).
    centered : bool
        Whether the Gram matrix was centred (PCA) or used as is (uncentred SVD of X).
    """

    eigenvalues: np.ndarray
    explained_variance_ratio: np.ndarray
    singular_values: np.ndarray
    scores: np.ndarray
    centered: bool

    def __post_init__(self) -> None:
        for array in (
            self.eigenvalues,
            self.explained_variance_ratio,
            self.singular_values,
            self.scores,
        ):
            array.flags.writeable = False

    @property
    def n_samples(self) -> int:
        return int(self.scores.shape[0])

    @property
    def n_components(self) -> int:
        return int(self.scores.shape[1])


def _sign_flip(V: np.ndarray) -> np.ndarray:
    """Flip each column so its largest-|value| entry is positive (first one within 1e-9 on ties).

    The tolerance makes ties that roundoff would break either way (n = 2 gives v = +-[1, -1]/sqrt 2)
    resolve the same way on every backend.
    """
    if V.size == 0:
        return V
    magnitude = np.abs(V)
    near_max = magnitude >= magnitude.max(axis=0, keepdims=True) * (1.0 - 1e-9)
    pivot = np.argmax(near_max, axis=0)  # first True in each column
    signs = np.sign(V[pivot, np.arange(V.shape[1])])
    signs[signs == 0] = 1.0
    return V * signs


def dual_pca(G: np.ndarray, components: int, *, center: bool = True) -> DualPCA:
    """PCA of n samples from their uncentred n x n Gram matrix ``G = X @ X.T``.

    Centres G (``H G H``) when asked, takes ``eigh``, sorts descending, and clips negative
    eigenvalues, and those below ``n * eps * w_max`` (eigh's roundoff on a PSD matrix), to 0;
    components beyond the rank therefore come out with zero variance and zero scores.

    Parameters
    ----------
    G : ndarray of shape (n, n)
        Uncentred Gram matrix (symmetric positive semidefinite), e.g. from
        :func:`harness.linalg.gram.gram_from_array`.
    components : int
        Leading components to keep, ``1 <= components <= n``.
    center : bool, default True
        Centre the samples first (PCA). False gives the uncentred SVD of X (the Gram's own
        eigenvalues, still divided by ``n - 1``).

    Returns
    -------
    DualPCA
        n = 1 with centring has zero variance: zeros throughout, no NaN.
    """
    G = np.asarray(G, dtype=np.float64)
    if G.ndim != 2 or G.shape[0] != G.shape[1]:
        raise ValueError(f"G must be a square (n, n) matrix, got shape {G.shape}")
    n = G.shape[0]
    if n == 0:
        raise ValueError("G is empty: PCA needs at least one sample")
    if not 1 <= components <= n:
        raise ValueError(f"components must be between 1 and n = {n}, got {components}")
    if not np.all(np.isfinite(G)):
        raise ValueError("G has NaN or infinite entries")

    Gm = center_gram(G) if center else (G + G.T) * 0.5
    w, V = np.linalg.eigh(Gm)
    w, V = w[::-1], V[:, ::-1]
    w = np.clip(w, 0.0, None)
    if w[0] > 0:
        w[w <= n * np.finfo(np.float64).eps * w[0]] = 0.0
    w, V = w[:components].copy(), _sign_flip(V[:, :components])

    singular_values = np.sqrt(w)
    total = max(float(np.trace(Gm)), 0.0)
    ratio = w / total if total > 0 else np.zeros_like(w)
    return DualPCA(
        eigenvalues=w / max(n - 1, 1),
        explained_variance_ratio=ratio,
        singular_values=singular_values,
        scores=np.ascontiguousarray(V * singular_values),
        centered=center,
    )


def principal_axes(
    blocks: Iterable[np.ndarray], pca: DualPCA, *, backend: Backend = "numpy"
) -> Iterator[np.ndarray]:
    """Principal axes ``A_k = Xc^T v_k / s_k``, streamed: the axes' columns of each column block.

    No mean vector is needed: ``Xc^T v = X^T H v`` and, for a centred PCA, each eigenvector v
    of ``H G H`` with nonzero eigenvalue is orthogonal to the ones vector, so ``H v = v`` and
    ``Xc^T v = X^T v``. v is recovered as ``scores_k / s_k`` and re-centred (``v - mean(v)``)
    so roundoff along the ones vector does not pick up the mean. Axes of zero-variance
    components are undefined and come out as zeros. Concatenated along columns, the pieces are
    scikit-learn's ``components_``: orthonormal rows (the nonzero ones).

    Parameters
    ----------
    blocks : iterable of ndarray of shape (n, c_b)
        Column blocks of the same n x d data matrix the Gram matrix came from (e.g.
        :func:`harness.linalg.gram_blocks.iter_column_blocks`); read once, in any order.
    pca : DualPCA
        From :func:`dual_pca`.
    backend : {"numpy", "cpu", "cuda"}

    Yields
    ------
    ndarray of shape (components, c_b), float64: the axes' entries for that block's columns.
    """
    s = pca.singular_values
    W = np.zeros_like(pca.scores)
    positive = s > 0
    W[:, positive] = pca.scores[:, positive] / (s[positive] ** 2)  # v_k / s_k
    if pca.centered:
        W -= W.mean(axis=0, keepdims=True)
    n = W.shape[0]

    if backend == "numpy":
        product = _product_numpy(W)
    elif backend in ("cpu", "cuda"):
        product = _product_torch(W, backend)
    else:
        raise ValueError(f"unknown backend {backend!r}; expected 'numpy', 'cpu' or 'cuda'")
    for block in blocks:
        if block.ndim != 2 or block.shape[0] != n:
            raise ValueError(f"every block must have shape ({n}, c), got {block.shape}")
        yield product(block)


def _product_numpy(W: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
    Wt = np.ascontiguousarray(W.T)

    def product(block: np.ndarray) -> np.ndarray:
        return Wt @ np.asarray(to_numpy(block), dtype=np.float64)

    return product


def _product_torch(W: np.ndarray, backend: Backend) -> Callable[[np.ndarray], np.ndarray]:
    torch = torch_module()
    if torch is None:
        raise RuntimeError(f"backend {backend!r} needs torch, but {torch_missing_reason()}")
    Wt = as_backend(np.ascontiguousarray(W.T), backend)

    def product(block: np.ndarray) -> np.ndarray:
        return to_numpy(Wt @ _float64_tensor(block, backend))

    return product
