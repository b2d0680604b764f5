"""Argument checks shared by the data functions, with errors that name the argument."""


def check_positive_int(name, value, minimum=1):
    """Raises ValueError unless `value` is an int (not bool) of at least `minimum`."""
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(
            f"`{name}` must be an integer of at least {minimum}. "
            f"Received: {name}={value!r}"
        )
