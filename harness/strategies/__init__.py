"""The registry of strategies per op; each one thin over linalg/, with its cost model and its
flop and byte counts. May import data/, machine/, bench/, linalg/ and base/."""
