"""Measure like production: realistic traffic files, open-loop replay, percentile reports."""
