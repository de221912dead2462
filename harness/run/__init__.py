"""Running a spec: prepare (one frozen run context), the runner, the benchmark phase (and what it does for a
point at a precision or compiled: variants), calibrate, and the asv cases. Orchestrates compute/, store/ and record/; may import anything below it, never
report/ or cli/."""
