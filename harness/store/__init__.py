"""The content-addressed result cache (generic, knows nothing of plans) and the run's keys and
entry types over it. May import record/, plan/ and below."""
