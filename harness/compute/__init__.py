"""The work a run schedules: chunks of a strategy over matrices, feature rows, the PCA and its
axes, float64 references and the verification of answers against them. May import store/ and
everything below it."""
