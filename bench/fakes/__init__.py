"""Fakes and fixtures the benchmarks and the tests share (tests may import bench; bench never imports tests):
an SGLang server faithful to its protocol, and the plans a fake model writes."""
