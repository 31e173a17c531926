"""Exact game mathematics: par sheets, optimal strategies and the integrity check's expectations.

Everything here is counted, never simulated: integer counts over every deal, and
:class:`fractions.Fraction` for the figures made from them. See docs/math.md for the method.
"""
