"""Paper B (Zhang et al. 2023): ELECTRA-style pretraining with false negatives corrected."""
