"""HTTP edge: the Litestar app, authentication, error bodies and the request log."""
