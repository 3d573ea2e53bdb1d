"""The book's figures, one module per result: each function draws one figure, axes with units."""
