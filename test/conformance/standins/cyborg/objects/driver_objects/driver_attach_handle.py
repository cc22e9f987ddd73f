# Stand-in for Cyborg's versioned driver object: a bag of the fields the driver sets.
class DriverAttachHandle(object):
    def __init__(self, **kwargs):
        for k, v in kwargs.items():
            setattr(self, k, v)
