import logging


def getLogger(name=None):
    return logging.getLogger(name)
