"""Foundations every stage uses: atomic writes, units, the numbers files must hold, the
progress display, executors. Imports
nothing of harness."""
