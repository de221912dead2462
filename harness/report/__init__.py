"""Presentation only: the terminal tables, the HTML report and its charts, the accuracy/time
frontier, the comparison of two runs, asv history. Pure builders of lines and pages from records; nothing here measures. May import
run/ and everything below it, never cli/."""
