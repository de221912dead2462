"""Pure, spec-free kernels named for the math, in the style of scikit-learn's extmath: dense and
factored SVD, Gram matrices, PCA, spectral features, device helpers. May import base/ only."""
