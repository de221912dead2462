"""The Plan value objects (model), the compiler that builds them in passes, the variants (each
strategy at each precision, eager or compiled) it plans, and the footprint checks. Reading a Plan imports only `model`. May import spec and everything below it."""
