"""Pure, spec-free kernels named for the math, in the style of scikit-learn's extmath: dense and
factored SVD, Gram matrices, PCA, spectral features, numeric precisions below float64,
torch.compile and CuPy helpers, device helpers. May import base/ only."""
