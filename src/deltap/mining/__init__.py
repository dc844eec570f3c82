"""Mining: Monte Carlo verification of which documents raise the probability that a solver's answer passes.

Modules, one step each: :mod:`pool` (candidates and provenance), :mod:`design` (per-trial seeds and inclusion
vectors), :mod:`trials` (the SQLite trial log), :mod:`estimate` (ΔP, regression, BH), :mod:`adaptive`
(group-sequential stopping), :mod:`verdicts` (labels and grades), :mod:`coalitions`, :mod:`engine` (``mine``) and
:mod:`simulation` (the benchmark with known truth).
"""
