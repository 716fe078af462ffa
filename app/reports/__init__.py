"""What the tooling's reports count and draw: percentiles and CDFs, and the charts (matplotlib, an
optional extra): shared by the eval's gate reports and the replay's and A/B's."""
