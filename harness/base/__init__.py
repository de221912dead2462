"""Foundations every stage uses: atomic writes, units, the progress display, executors. Imports
nothing of harness."""
