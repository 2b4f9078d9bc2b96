"""Quality benchmarks: nDCG@10, recall and parity on the BEIR collections and the hand-built sets."""
