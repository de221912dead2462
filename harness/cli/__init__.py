"""The command line: the launcher (entry), exit codes, and one module per command. Imports
anything below it; nothing imports it."""
