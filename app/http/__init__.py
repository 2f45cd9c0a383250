"""What every room that answers HTTP shares, whatever it answers: the error type of a request
that cannot be meant (and its 413 form), the one-line error body, the bounded body reader and
the endpoint type. Below the verbs and the people's API, so that neither needs the other for
them; it imports nothing of ``app``."""
