"""The timing kit: measure a callable under explicit thread counts (threads, measure), beside a
record of what else the machine was doing (conditions, noise), and share a time budget (budget).
Knows nothing of plans, strategies or records; the benchmark phase that uses it lives in run/.
May import linalg/ and base/."""
