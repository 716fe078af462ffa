"""The widget's conversations as a service: starting and continuing one (a turn recorded with its
answer), handing it over to the bank's agents, taking, replying, releasing and purging it. Typed
values in and out (values.py); the chat API and the console only translate HTTP to it. Every read
and write is scoped by the tenant (app/data/conversations.py, app/data/handovers.py)."""
