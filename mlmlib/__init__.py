"""mlmlib: masking, pretraining and evaluation for the MLM pretraining companion book."""

__version__ = "0.1.0"
