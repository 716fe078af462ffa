"""LLM engines behind one small interface: generate (a stream of events), abort, health."""
