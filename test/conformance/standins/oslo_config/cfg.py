# Stand-in for oslo.config: the one error the drivers catch.
class NoSuchOptError(AttributeError):
    pass
