"""Personal data out of customers' questions, for traffic that leaves the service (`traffic export`,
app/replay/traffic.py); measured by the eval (`traffic pii-eval`, app/eval/pii.py)."""
