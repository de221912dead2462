"""The experiment spec: its sections as pydantic models (`sections`) and reading a spec file with
every problem at once (`reading`). Imports data (the data forms' models), linalg (features,
precisions), machine (the environments axis), strategies (their names) and base; nothing above."""
