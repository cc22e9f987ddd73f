# Stand-in for cyborg.common.exception: each exception Cyborg's drivers raise, with its kwargs.
class CyborgException(Exception):
    def __init__(self, message=None, **kwargs):
        super(CyborgException, self).__init__(message or '%s %r' % (type(self).__name__, kwargs))
        self.kwargs = kwargs


def __getattr__(name):
    cls = type(name, (CyborgException,), {})
    globals()[name] = cls
    return cls
