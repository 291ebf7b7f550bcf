"""Running without the network: the hub mirror (`python -m mlmlib mirror`) and the rehearsal's
stand-ins (`python -m mlmlib run --rehearse`).

This package sits above the papers: it reads the hub resources the data layer and each paper
declare (their `resources` modules) and builds or fetches them. The runs package never imports
it; the command line's entry point (mlmlib.__main__) hands the runner what it needs from here.
"""
