"""The pure core: bill facts computed with Decimal, no I/O."""
