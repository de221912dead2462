"""The Plan value objects (model), the compiler that builds them in passes, and the footprint
checks. Reading a Plan imports only `model`. May import spec and everything below it."""
