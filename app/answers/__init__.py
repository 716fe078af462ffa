"""Answering a question about a bill: the request pipeline from records to the audit row."""
