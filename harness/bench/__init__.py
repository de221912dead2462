"""The benchmark phase: after a full analysis, every compared strategy is timed on a sample of
matrices within a time budget (budget), under explicit thread counts (threads), beside a record
of what else the machine was doing (conditions, noise), and checked against float64 references
computed once per run (references). `phase` runs it; `Runner` only orchestrates."""
