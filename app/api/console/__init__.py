"""The agent console (server-rendered HTML): routes.py (the controller), pages.py (pages, security
headers, error pages), forms.py (fields, the question, CSRF checks), session.py (who is signed in)
and views.py (what the pages show, written out for people)."""
