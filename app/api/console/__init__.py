"""The agent console (server-rendered HTML): routes.py (the controller), handover.py (the widget
conversations handed to an agent: queue, take, reply, hand back), pages.py (pages, security headers,
error pages), forms.py (fields, the question, the reply, CSRF checks), session.py (who is signed in),
views.py and conversation_views.py (what the pages show, written out for people)."""
