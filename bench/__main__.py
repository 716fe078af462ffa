"""./scripts/dev bench [BENCH] [options], BENCH one of: explain (the default), prefix, priorities, ladder,
cache, cache-days, cache-replay, chat, conversations, overload, shedding, overhead, in-process, workers,
statement-size, import, knowledge, killed-slots.

See each module's docstring."""

import sys

from bench import (
    answer_cache,
    cache_days,
    cache_replay,
    chat_stream,
    conversations,
    explain_load,
    import_load,
    in_process,
    killed_slots,
    knowledge,
    ladder,
    overhead,
    overload,
    prefix_cache,
    priorities,
    shedding,
    statement_size,
    workers,
)

BENCHES = {
    "explain": explain_load.main,
    "prefix": prefix_cache.main,
    "priorities": priorities.main,
    "ladder": ladder.main,
    "cache": answer_cache.main,
    "cache-days": cache_days.main,
    "cache-replay": cache_replay.main,
    "chat": chat_stream.main,
    "conversations": conversations.main,
    "killed-slots": killed_slots.main,
    "overload": overload.main,
    "shedding": shedding.main,
    "overhead": overhead.main,
    "in-process": in_process.main,
    "workers": workers.main,
    "statement-size": statement_size.main,
    "import": import_load.main,
    "knowledge": knowledge.main,
}

if len(sys.argv) > 1 and sys.argv[1] in BENCHES:
    BENCHES[sys.argv[1]](sys.argv[2:])
else:
    explain_load.main(sys.argv[1:])
