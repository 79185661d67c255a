"""Every report of a sweep: ``render`` shows the rows and the decisions; ``cli`` re-renders a directory.

Above both ``reports`` (the renderers) and ``promotion`` (the gate): ``cli`` decides the promotion
first (``promotion.document.sweep_promotion``), then hands the decisions to ``render``, which
imports no gate.
"""
