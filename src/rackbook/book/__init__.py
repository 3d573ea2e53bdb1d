"""The book: executing the result notebooks (``runner``), pages generated from data
(``pages``) and the one plotting style (``plotting``)."""
