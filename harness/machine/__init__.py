"""This machine: what it is (info), its measured roofs (roofline) and what earlier runs learnt
about it (wisdom). Wisdom sits below the planner that reads it, as FFTW's does; the benchmark
phase that teaches it is above. May import bench/, linalg/ and base/."""
