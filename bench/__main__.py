from bench.explain_load import main

main()
