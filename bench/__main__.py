"""./scripts/dev bench [explain|prefix|priorities] [options]: see each module's docstring."""

import sys

from bench import explain_load, prefix_cache, priorities

BENCHES = {"explain": explain_load.main, "prefix": prefix_cache.main, "priorities": priorities.main}

if len(sys.argv) > 1 and sys.argv[1] in BENCHES:
    BENCHES[sys.argv[1]](sys.argv[2:])
else:
    explain_load.main(sys.argv[1:])
