# Stand-in for oslo.serialization's jsonutils: json with the same keyword arguments.
import json


def dumps(obj, **kwargs):
    return json.dumps(obj, **kwargs)


def loads(text, **kwargs):
    return json.loads(text, **kwargs)
