"""The book's figures, one module per result (``figures.decode_parity``, ...). Each function
draws one figure from an analysis (:mod:`rackbook.results`) and returns it; the chapter shows
it. Axes carry units; colours and markers come from :mod:`rackbook.book.plotting`."""
