"""One package per paper: its method, its experiment driver and its claims.

Papers use the core (`mlmlib.*`) and the data package; a paper never imports another.
"""
