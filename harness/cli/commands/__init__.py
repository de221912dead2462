"""One module per command (asv's `commands/` layout): each defines `arguments(parser)` and
`main(args) -> int`, and imports at its top what that command needs. `harness.cli.main` imports
only the module of the command asked for, so `harness validate` never pays for the run's engines
and `harness compare --help` for none of them."""
