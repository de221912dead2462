"""Running a spec: prepare (one frozen run context), the runner, the benchmark phase, calibrate,
and the asv cases. Orchestrates compute/, store/ and record/; may import anything below it, never
report/ or cli/."""
