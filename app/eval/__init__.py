"""The key-field gate: a golden set of questions about fixed statements, run against engine profiles
(`bill-assistant eval`), with key-field errors counted in the raw model output (app/eval/keyfields.py)
and a baseline/candidate comparison that fails on regressions (app/eval/gate.py)."""
