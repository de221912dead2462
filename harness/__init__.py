"""spectral-harness: declarative benchmarks of the linear algebra run over model weights."""

__version__ = "0.1.0"
