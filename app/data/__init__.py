"""Postgres: schema, connections, and the queries of each concern."""
