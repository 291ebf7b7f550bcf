"""Paper A (Chiang & Yogatama 2023): synthetic languages, and the real-text perturbation analysis."""
