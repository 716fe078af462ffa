"""Bill Assistant: explains bank bills with exact numbers."""
